"""Simulation of payoff cells for a run, with the run store as the cache.

Every match a run plays goes through ``StoredSimulator.play``: pairs whose matches are
already in the store (a resumed run) are not played again, the others are planned into
chunks, played on the execution backend (local process pool or Ray) and written to the
store as soon as they are back. Because a match's seed depends only on the run seed, the
two policy names and the match index (``csro.evaluation.runner.derive_seed``), a resumed or
re-scheduled run reproduces the same results.

Phases keep the three kinds of matches apart: ``meta`` (the population's own payoff table,
the empirical game of PSRO), ``eval`` (members against the evaluation population) and
``oracle`` (candidate programs against sigma's support).
"""

from __future__ import annotations

from typing import Callable, Sequence

from csro.evaluation.payoff_table import PayoffTable
from csro.evaluation.policy_ref import PolicySpec
from csro.evaluation.runner import MatchResult, plan_chunks, record
from csro.games import CodeGame
from csro.policies import SandboxLimits

ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)


class StoredSimulator:
    """Plays (policy, opponent) pairs for ``matches`` matches each, at most once per run."""

    def __init__(self, game: CodeGame, store, backend, *, seed: int, limits: SandboxLimits,
                 progress: ProgressFn | None = None):
        self.game = game
        self.store = store
        self.backend = backend
        self.seed = seed
        self.limits = limits
        self.progress = progress

    def _missing(self, phase: str, pairs: Sequence[tuple[PolicySpec, PolicySpec]], matches: int):
        out = []
        for policy, opponent in pairs:
            stored = self.store.matches(phase, {policy.name, opponent.name})
            done = sum(1 for r in stored if set(r.policies) == {policy.name, opponent.name})
            if done < matches:
                out.append((policy, opponent))
        return out

    def play(self, phase: str, pairs: Sequence[tuple[PolicySpec, PolicySpec]], matches: int) -> PayoffTable:
        """Ensure every pair has ``matches`` stored matches in ``phase``; their payoff table.

        The table holds both directions of each pair (``record``), built from the store.
        A pair partly played before a crash is replayed whole (its stored matches are kept;
        identical re-adds are no-ops).
        """
        todo = self._missing(phase, pairs, matches)
        if todo:
            chunks = plan_chunks(self.game.name, self.game.num_players, todo, matches, self.seed, self.limits)
            progress = (lambda done, total: self.progress(phase, done, total)) if self.progress else None
            results = self.backend.run(chunks, progress=progress)
            self.store.add_matches(phase, results)
        table = PayoffTable()
        record(table, self._stored(phase, pairs))
        return table

    def _stored(self, phase: str, pairs: Sequence[tuple[PolicySpec, PolicySpec]]) -> list[MatchResult]:
        out: list[MatchResult] = []
        for policy, opponent in pairs:
            names = {policy.name, opponent.name}
            out.extend(r for r in self.store.matches(phase, names) if set(r.policies) == names)
        return out
