"""Evaluate policies against an opponent population: the payoff table and the metrics.

This is the entry point the CLI and the CSRO loop use; it plans chunks, runs them with the
match runner and scores every policy with the population metrics.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Sequence

from csro.errors import ConfigError
from csro.evaluation.metrics import PopulationScore, population_score
from csro.evaluation.payoff_table import PayoffTable
from csro.evaluation.policy_ref import PolicySpec
from csro.evaluation.payoff_table import MatchResult, record
from csro.evaluation.runner import ProgressFn, plan_chunks, run_chunks
from csro.games import CodeGame
from csro.policies import SandboxLimits
from csro.seeding import draw_seed

if TYPE_CHECKING:
    from csro.evaluation.backends import Backend


@dataclasses.dataclass
class Evaluation:
    """A finished evaluation: the table, every match result, one score per policy, and the
    seed its matches were played with (the one given, or the one drawn)."""

    table: PayoffTable
    results: list[MatchResult]
    scores: list[PopulationScore]
    seed: int

    def forfeit_details(self, policy: str, limit: int = 5) -> list[dict]:
        """Up to ``limit`` recorded forfeits of ``policy`` with their reasons and details."""
        out = []
        for res in self.results:
            if res.forfeit and res.policies[res.forfeit[0]] == policy:
                seat, reason, detail = res.forfeit
                out.append({"opponents": [p for i, p in enumerate(res.policies) if i != seat],
                            "reason": reason, "detail": detail})
                if len(out) >= limit:
                    break
        return out


def unique_names(specs: Sequence[PolicySpec]) -> list[PolicySpec]:
    """The specs with names made unique (``name``, ``name#2``, ...), order kept."""
    seen: dict[str, int] = {}
    out = []
    for spec in specs:
        n = seen.get(spec.name, 0) + 1
        seen[spec.name] = n
        out.append(spec if n == 1 else dataclasses.replace(spec, name=f"{spec.name}#{n}"))
    return out


def evaluate(game: CodeGame, policies: Sequence[PolicySpec], opponents: Sequence[PolicySpec], *,
             matches: int = 10, seed: int | None = None, limits: SandboxLimits = SandboxLimits(),
             processes: int | None = None, progress: ProgressFn | None = None,
             backend: Backend | None = None) -> Evaluation:
    """Play ``matches`` matches of every policy against every opponent and score them.

    A policy that is also in the opponent list is matched against itself too (the
    published RRPS bot table includes self-play). Policy and opponent names must be unique
    within each list; a policy and an opponent with the same name are the same policy.

    ``backend`` plays the chunks (``csro.evaluation.backends``: a local pool or Ray); None
    means the local process pool of ``processes`` processes. The results do not depend on it.
    ``seed`` None: one is drawn (``csro.seeding.draw_seed``), so that no policy can compute
    its match's seeds; a given seed repeats the same matches (and is as public as the caller
    makes it).
    """
    if matches < 1:
        raise ConfigError(f"matches must be at least 1, got {matches}")
    if backend is not None and processes is not None:
        raise ConfigError("give processes to the backend (LocalBackend(processes)), not with it")
    if not policies:
        raise ConfigError("no policy to evaluate")
    if not opponents:
        raise ConfigError(f"game {game.name!r} has an empty evaluation population; pass opponents")
    for label, specs in (("policy", policies), ("opponent", opponents)):
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ConfigError(f"duplicate {label} names: {names}")
    pairs = [(p, o) for p in policies for o in opponents]
    seed = draw_seed() if seed is None else seed
    if backend is None:
        chunks = plan_chunks(game.name, game.num_players, pairs, matches, seed, limits, parallel=processes)
    else:
        chunks = plan_chunks(game.name, game.num_players, pairs, matches, seed, limits, backend.chunk_matches,
                             backend.parallelism)
    if backend is None:
        results = run_chunks(chunks, processes=processes, progress=progress)
    else:
        results = backend.run(chunks, progress=progress)
    table = PayoffTable()
    record(table, results)
    population = [o.name for o in opponents]
    scores = [population_score(table, p.name, population) for p in policies]
    return Evaluation(table, results, scores, seed)
