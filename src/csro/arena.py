"""The Arena: where an oracle's candidate programs meet the game.

Hennes et al. (arXiv 2603.10098) score a candidate best response by its expected utility
``u`` against the meta-strategy sigma, and the LLM team needs the outcome of its programs to
repair and refine them. The Arena is the one door through which an oracle plays anything:

- ``check``: the compile-and-smoke check (a whole match against the game's ``random``
  built-in in every role; a forfeit of the candidate makes it invalid, with a short error
  that a repair prompt can show);
- ``evaluate``: a candidate's Feedback against sigma (the paper's ``u``, per opponent);
- ``play``: candidates against named population members (an evolutionary cascade);
- ``trace``: one match with a readable line per round (what an oracle observes).

Our design (the paper has no such layer): every one of these matches is played on the run's
execution backend, under the run's sandbox limits, and written to the run store (phases
``check``, ``oracle``, ``trace``), so a resumed run finds them again and a counting backend
sees them all. Untrusted code only ever runs in the sandboxed workers the runner starts; this
process parses it with ``ast`` at most.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import math
import statistics
from typing import Protocol, Sequence

from csro.evaluation import Z95, PayoffTable, PolicySpec, Trace, code_policy, record, resolve
from csro.games import CodeGame
from csro.policies import describe_failure
from csro.seeding import derive_seed
from csro.simulate import StoredSimulator


@dataclasses.dataclass(frozen=True)
class Opponent:
    """One policy of the opposing population with its sigma weight.

    Attributes:
      name: its policy id in the population (``p0``, ...).
      weight: its weight in sigma.
      spec: the playable policy (a built-in or code).
      description: for built-ins a one-line description; ``""`` for code policies.
    """

    name: str
    weight: float
    spec: PolicySpec
    description: str = ""

    @property
    def playable(self) -> PolicySpec:
        """The spec under the opponent's name (matches and their seeds are keyed by it)."""
        return self.spec if self.spec.name == self.name else dataclasses.replace(self.spec, name=self.name)


@dataclasses.dataclass(frozen=True)
class Profile:
    """The other seats of a match, filled from their populations, with the probability of
    meeting exactly them under sigma; ``members[player]`` (the oracle's own seat) is None."""

    weight: float
    members: tuple[Opponent | None, ...]

    @property
    def name(self) -> str:
        return "+".join(m.name for m in self.members if m is not None)


@dataclasses.dataclass(frozen=True)
class Target:
    """What one best-response call answers: sigma over the opposing population.

    Attributes:
      iteration: the PSRO iteration k (the oracle answers sigma_{k-1}).
      player: the player (and seat) the best response is for (0 in symmetric games).
      opponents: the opposing population with sigma weights, in population order (in an
        n-player or asymmetric game: every other seat's members, weighted by their marginal).
      profiles: n-player and asymmetric games: the other seats' weighted profiles, which is
        what the best response is played against (with the candidate in ``player``'s seat).
        Empty in a symmetric two-player game, where each opponent fills the other seat and
        seats alternate between matches.
    """

    iteration: int
    player: int
    opponents: tuple[Opponent, ...]
    profiles: tuple[Profile, ...] = ()

    @property
    def support(self) -> tuple[Opponent, ...]:
        """The opponents sigma gives weight."""
        return tuple(o for o in self.opponents if o.weight > 0)

    @property
    def weights(self) -> dict[str, float]:
        """What a candidate's Feedback is reported against -> its sigma weight: the opponents,
        or in an n-player or asymmetric game the other seats' profiles."""
        if self.profiles:
            return {pr.name: pr.weight for pr in self.profiles}
        return {o.name: o.weight for o in self.opponents}

    @property
    def seat(self) -> int | None:
        """The seat the best response plays; None when it plays every seat (symmetric games)."""
        return self.player if self.profiles else None

    def named(self, names: Sequence[str]) -> list[Opponent]:
        """The opponents called ``names``, in that order."""
        by_name = {o.name: o for o in self.opponents}
        return [by_name[n] for n in names]


@dataclasses.dataclass(frozen=True)
class Feedback:
    """How a candidate did against sigma (the paper's u, plus the detail we show the LLM).

    Attributes:
      utility: the sigma-weighted mean match return of the candidate (the paper's u).
      per_opponent: mean return against each opponent with weight > 0.
      forfeits: reason -> matches the candidate forfeited.
      forfeit_details: a few ``{"opponents", "reason", "detail"}``.
      matches: matches played.
      ci95: half-width of the 95% confidence interval of ``utility`` (cells independent).
    """

    utility: float
    per_opponent: dict[str, float]
    forfeits: dict[str, int]
    forfeit_details: tuple[dict, ...]
    matches: int
    ci95: float = 0.0


class Arena(Protocol):
    """Where an oracle's candidates are played (see the module docstring)."""

    def candidate(self, source: str) -> PolicySpec:
        """A candidate program as a playable spec, named as its matches are seeded and stored
        (a candidate that joins the population keeps them as its cells)."""

    def check(self, sources: Sequence[str], seat: int | None = None) -> list[str | None]:
        """None for each valid program, else a short error naming what failed (checked in
        every role, or only in ``seat`` for a policy of one seat)."""

    def evaluate(self, source: str, target: Target) -> Feedback:
        """The candidate's Feedback against ``target``'s sigma."""

    def play(self, sources: Sequence[str], opponents: Sequence[Opponent], matches: int | None = None) -> list[dict[str, float]]:
        """Per candidate, its mean return against each opponent (``matches`` per cell, the
        run's number by default); stored matches are reused."""

    def trace(self, source: str, opponent: Opponent, *seed_parts: object) -> Trace:
        """One match of the candidate (seat 0) against ``opponent``, seeded from the run seed
        and ``seed_parts``, with a readable line per round."""


MAX_DETAILS = 3


class MatchArena:
    """The Arena of a run: its simulator (backend, store, sandbox limits) and match count.

    Candidates are named by their hash (``cand-<sha256[:12]>``), so the matches of a program
    are found again in the store whichever oracle step wrote it.
    """

    def __init__(self, game: CodeGame, sim: StoredSimulator, *, matches: int):
        self.game = game
        self.sim = sim
        self.matches = matches
        self._feedback: dict[tuple, Feedback] = {}

    def candidate(self, source: str) -> PolicySpec:
        """A candidate program as a playable spec named by its hash."""
        spec = code_policy("cand", source, self.game)
        return dataclasses.replace(spec, name=f"cand-{spec.sha256[:12]}")

    def check(self, sources: Sequence[str], seat: int | None = None) -> list[str | None]:
        errors: list[str | None] = [syntax_error(s) for s in sources]
        candidates = {i: self.candidate(s) for i, s in enumerate(sources) if errors[i] is None}
        if not candidates:
            return errors
        random = resolve("builtin:random", self.game)
        distinct = {c.name: c for c in candidates.values()}
        if seat is None:
            results = self.sim.results("check", [(c, random) for c in distinct.values()], self.game.check_matches)
        else:
            seated = [tuple(c if s == seat else random for s in range(self.game.num_players)) for c in distinct.values()]
            results = [r for rs in self.sim.profile_results("check", seated, 1) for r in rs]
        failed: dict[str, str] = {}
        for r in results:
            if r.forfeit is not None and r.policies[r.forfeit[0]] in distinct:
                failed.setdefault(r.policies[r.forfeit[0]], describe_failure(r.forfeit[1], r.forfeit[2]))
        for i, c in candidates.items():
            errors[i] = failed.get(c.name)
        return errors

    def evaluate(self, source: str, target: Target) -> Feedback:
        if target.profiles:
            return self._evaluate_seated(source, target)
        candidate = self.candidate(source)
        support = target.support
        key = (candidate.name, tuple((o.name, o.weight) for o in support))
        if key in self._feedback:
            return self._feedback[key]
        results = self.sim.results("oracle", [(candidate, o.playable) for o in support], self.matches)
        table = PayoffTable()
        record(table, results)
        per_opponent = {o.name: table.mean(candidate.name, o.name) for o in support}
        utility = float(sum(o.weight * per_opponent[o.name] for o in support))
        details = tuple(
            {"opponents": [p for p in r.policies if p != candidate.name], "reason": r.forfeit[1], "detail": r.forfeit[2]}
            for r in results if r.forfeit and r.policies[r.forfeit[0]] == candidate.name)[:MAX_DETAILS]
        ci95 = Z95 * math.sqrt(sum((o.weight * table.cell(candidate.name, o.name).sem) ** 2 for o in support))
        fb = Feedback(utility, per_opponent, dict(table.forfeits(candidate.name)), details,
                      sum(table.count(candidate.name, o.name) for o in support), ci95)
        self._feedback[key] = fb
        return fb

    def _evaluate_seated(self, source: str, target: Target) -> Feedback:
        """u against weighted profiles of the other seats, the candidate in its player's seat."""
        candidate = self.candidate(source)
        weighted = [pr for pr in target.profiles if pr.weight > 0]
        key = (candidate.name, target.player, tuple((pr.name, pr.weight) for pr in weighted))
        if key in self._feedback:
            return self._feedback[key]
        seated = [tuple(candidate if m is None else m.playable for m in pr.members) for pr in weighted]
        results = self.sim.profile_results("oracle", seated, self.matches)
        p = target.player
        per_profile, sems, forfeits, details = {}, {}, collections.Counter(), []
        for pr, rs in zip(weighted, results):
            mine = [r.returns[p] for r in rs]
            per_profile[pr.name] = float(sum(mine) / len(mine))
            sems[pr.name] = float(statistics.stdev(mine) / math.sqrt(len(mine))) if len(mine) > 1 else 0.0
            for r in rs:
                if r.forfeit and r.forfeit[0] == p:
                    forfeits[r.forfeit[1]] += 1
                    details.append({"opponents": [n for s, n in enumerate(r.policies) if s != p],
                                    "reason": r.forfeit[1], "detail": r.forfeit[2]})
        utility = float(sum(pr.weight * per_profile[pr.name] for pr in weighted))
        ci95 = Z95 * math.sqrt(sum((pr.weight * sems[pr.name]) ** 2 for pr in weighted))
        fb = Feedback(utility, per_profile, dict(forfeits), tuple(details[:MAX_DETAILS]),
                      sum(len(rs) for rs in results), ci95)
        self._feedback[key] = fb
        return fb

    def play(self, sources: Sequence[str], opponents: Sequence[Opponent], matches: int | None = None) -> list[dict[str, float]]:
        candidates = [self.candidate(s) for s in sources]
        table = self.sim.play("oracle", [(c, o.playable) for c in candidates for o in opponents], matches or self.matches)
        return [{o.name: table.mean(c.name, o.name) for o in opponents} for c in candidates]

    def trace(self, source: str, opponent: Opponent, *seed_parts: object) -> Trace:
        you = dataclasses.replace(self.candidate(source), name="you")
        result = self.sim.traced("trace", [you, opponent.playable], derive_seed(self.sim.seed, *seed_parts))
        return Trace(list(result.trace), result)


def syntax_error(source: str) -> str | None:
    """The program's syntax error as one line, or None (parsed with ``ast``, never run)."""
    try:
        ast.parse(source)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        return f"SyntaxError: {exc.msg} at line {exc.lineno}" + (f": {line}" if line else "")
    except ValueError as exc:
        return f"the program cannot be parsed: {exc}"
    return None
