"""Simulation of payoff cells for a run, with the run store as the cache.

Every match a run plays goes through ``StoredSimulator.play``: pairs whose matches are
already in the store (a resumed run) are not played again, the others are planned into
chunks, played on the execution backend (local process pool or Ray) and written to the
store as soon as they are back. Because a match's seed depends only on ``seed`` (the run's
match root: its seed keyed with the secret kept in its store, ``csro.seeding.match_root``), the
two policy names and the match index (``csro.seeding.derive_seed``), a resumed or
re-scheduled run reproduces the same results.

Phases keep the kinds of matches apart: ``meta`` (the population's own payoff table, the
empirical game of PSRO), ``eval`` (members against the evaluation population), ``oracle``
(candidate programs against sigma's support), ``check`` (a candidate's smoke matches) and
``trace`` (a match an oracle observes round by round). A ``meta`` cell also counts the
``oracle`` matches of its names (``csro.store.cell_matches``): a new member plays its cells
under the name its oracle measured it by (``csro.store.cell_names``), so what the oracle
played is not played again.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Collection, Protocol, Sequence

from csro.evaluation.backends import Backend
from csro.evaluation.payoff_table import Z95, MatchResult, PayoffTable, record
from csro.evaluation.policy_ref import PolicySpec
from csro.evaluation.runner import Chunk, MatchJob, SeatRef, plan_chunks, plan_profiles
from csro.games import CodeGame
from csro.policies import SandboxLimits

ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)


class MatchStore(Protocol):
    """What the simulator keeps its matches in (``csro.store.RunStore`` is one): results are
    added by phase and read back by the names of their policies, as a cell of that phase
    counts them (the population's cells include what an oracle measured: ``cell_matches``)."""

    def add_matches(self, phase: str, results: Sequence[MatchResult]) -> None: ...

    def cell_matches(self, phase: str, names: Collection[str]) -> list[MatchResult]: ...


class StoredSimulator:
    """Plays (policy, opponent) pairs for ``matches`` matches each, at most once per run."""

    def __init__(self, game: CodeGame, store: MatchStore, backend: Backend, *, seed: int, limits: SandboxLimits,
                 progress: ProgressFn | None = None):
        self.game = game
        self.store = store
        self.backend = backend
        self.seed = seed
        self.limits = limits
        self.progress = progress

    def play(self, phase: str, pairs: Sequence[tuple[PolicySpec, PolicySpec]], matches: int) -> PayoffTable:
        """Ensure every pair has ``matches`` stored matches in ``phase``; their payoff table.

        The table holds both directions of each pair (``record``), built from the store.
        """
        table = PayoffTable()
        record(table, self.results(phase, pairs, matches))
        return table

    def results(self, phase: str, pairs: Sequence[tuple[PolicySpec, PolicySpec]], matches: int) -> list[MatchResult]:
        """Ensure every pair has ``matches`` stored matches in ``phase``; their results.

        Only missing matches are played: a pair partly played before a crash, or asked for
        more matches later, gets just the match indices it lacks (a match's seed depends on
        the match root, the two names and its index only, so the results are the same).
        """
        stored = [self._stored(phase, pair) for pair in pairs]
        todo = [i for i, results in enumerate(stored) if len(results) < matches]
        if todo:
            chunks = plan_chunks(self.game.name, self.game.num_players, [pairs[i] for i in todo], matches,
                                 self.seed, self.limits, self.backend.chunk_matches, self.backend.parallelism)
            known = {r.seed for i in todo for r in stored[i]}  # a match's seed names it
            chunks = [c for c in (dataclasses.replace(c, jobs=tuple(j for j in c.jobs if j.seed not in known))
                                  for c in chunks) if c.jobs]
            self.store.add_matches(phase, self._run(phase, chunks))
            for i in todo:
                stored[i] = self._stored(phase, pairs[i])
        return [r for results in stored for r in results]

    def play_sized(self, phase: str, pairs: Sequence[tuple[PolicySpec, PolicySpec]], matches: int, *,
                   ci_width: float | None, max_matches: int) -> PayoffTable:
        """``play``, then more matches for each pair whose 95% confidence interval is wider than
        ``ci_width`` (in match-return units), up to ``max_matches`` a pair.

        The number of matches a cell still needs is estimated from its sample standard
        deviation, ``(2 z sd / width)^2``, and asked for in rounds (at least doubling a cell's
        count each round) until every cell is narrow enough or at the cap. Deterministic: the
        extra matches have fixed indices and seeds.
        """
        table = self.play(phase, pairs, matches)
        if ci_width is None:
            return table
        while True:
            want: dict[int, list[tuple[PolicySpec, PolicySpec]]] = {}
            for a, b in pairs:
                cell = table.cell(a.name, b.name)
                if cell.count >= max_matches or 2 * Z95 * cell.sem <= ci_width:
                    continue
                need = math.ceil((2 * Z95 * math.sqrt(cell.variance) / ci_width) ** 2)
                want.setdefault(min(max_matches, max(need, 2 * cell.count)), []).append((a, b))
            if not want:
                return table
            for target, group in want.items():
                self.play(phase, group, target)
            table = self.play(phase, pairs, matches)

    def profile_results(self, phase: str, profiles: Sequence[Sequence[PolicySpec]], matches: int) -> list[list[MatchResult]]:
        """Ensure every profile (one policy per seat, in seat order) has ``matches`` stored
        matches in ``phase``; the results of each profile. Only missing matches are played."""
        names = [tuple(s.name for s in profile) for profile in profiles]
        stored = [self._seated(phase, n) for n in names]
        todo = [i for i, results in enumerate(stored) if len(results) < matches]
        if todo:
            chunks = plan_profiles(self.game.name, [profiles[i] for i in todo], matches, self.seed, self.limits,
                                   self.backend.chunk_matches, self.backend.parallelism)
            known = {r.seed for i in todo for r in stored[i]}
            chunks = [c for c in (dataclasses.replace(c, jobs=tuple(j for j in c.jobs if j.seed not in known))
                                  for c in chunks) if c.jobs]
            self.store.add_matches(phase, self._run(phase, chunks))
            for i in todo:
                stored[i] = self._seated(phase, names[i])
        return stored

    def _seated(self, phase: str, names: tuple[str, ...]) -> list[MatchResult]:
        return [r for r in self.store.cell_matches(phase, set(names)) if r.policies == names]

    def traced(self, phase: str, seats: Sequence[PolicySpec], seed: int) -> MatchResult:
        """One match (policies in seat order) with its round-by-round trace, on the backend;
        stored like any match (the trace itself is not kept)."""
        chunk = Chunk(self.game.name, (MatchJob(tuple(SeatRef.of(s) for s in seats), seed),), self.limits, trace=True)
        result = self._run(phase, [chunk])[0]
        self.store.add_matches(phase, [result])
        return result

    def _run(self, phase: str, chunks: Sequence[Chunk]) -> list[MatchResult]:
        progress = (lambda done, total: self.progress(phase, done, total)) if self.progress else None
        return self.backend.run(chunks, progress=progress)

    def _stored(self, phase: str, pair: tuple[PolicySpec, PolicySpec]) -> list[MatchResult]:
        names = {pair[0].name, pair[1].name}
        return [r for r in self.store.cell_matches(phase, names) if set(r.policies) == names]
