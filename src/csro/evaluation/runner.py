"""The one match runner: batched lockstep play, parallel over processes, seeded.

Matches are grouped into *chunks*: all matches of one focal policy for one match index
(e.g. a policy's match #3 against each of the 43 RoShamBo bots). A chunk is played in
lockstep by one runner process: every round, the pending requests of all its matches
are gathered and each sandboxed policy answers all of its requests in **one** worker
round trip (``PolicyWorker.call``); trusted built-ins answer in-process. Chunks are
spread over a process pool, so cells run in parallel on the cores.

Each chunk starts fresh sandbox workers for the code policies it needs, so no state
leaks between chunks and results do not depend on how chunks were scheduled: a match's
seed is derived from the run seed, the two policy names and the match index only. Within
a worker a policy class gets one instance per seat of each match; module-level globals
are shared by the matches a worker plays together (the policy API asks for state on
``self``).

A policy that fails in any way forfeits that match (``forfeit_returns``) with a recorded
``Reason``; the other matches go on.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import multiprocessing
import os
import time
from typing import Callable, Sequence

from csro.evaluation.payoff_table import PayoffTable
from csro.evaluation.policy_ref import PolicySpec
from csro.games import load_game
from csro.games._base import IllegalAction
from csro.policies import Call, Forfeit, PolicyWorker, Reason, SandboxLimits

ProgressFn = Callable[[int, int], None]


@dataclasses.dataclass(frozen=True)
class SeatRef:
    """A picklable description of the policy in one seat (re-resolved in the runner process)."""

    name: str
    source: str | None
    builtin: str | None
    class_name: str

    @classmethod
    def of(cls, spec: PolicySpec) -> "SeatRef":
        return cls(spec.name, spec.source, spec.builtin.name if spec.builtin else None, spec.class_name)


@dataclasses.dataclass(frozen=True)
class MatchJob:
    """One match to play: the policies per seat and the match seed."""

    seats: tuple[SeatRef, ...]
    seed: int


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """The outcome of one match. ``forfeit`` is (seat, reason, detail) or None."""

    policies: tuple[str, ...]
    returns: tuple[float, ...]
    seed: int
    forfeit: tuple[int, str, str] | None = None


@dataclasses.dataclass(frozen=True)
class Chunk:
    """Matches played together in lockstep by one runner process."""

    game: str
    jobs: tuple[MatchJob, ...]
    limits: SandboxLimits


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from the run seed and names/indices, independent of scheduling."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def plan_chunks(game_name: str, num_players: int, pairs: Sequence[tuple[PolicySpec, PolicySpec]],
                matches: int, seed: int, limits: SandboxLimits) -> list[Chunk]:
    """Chunks for ``matches`` matches of each (policy, opponent) pair.

    Two-player games alternate seats (the policy is seat 0 in even matches); in
    n-player games the policy takes seat ``m % n`` and the opponent fills the others.
    """
    by_key: dict[tuple[str, int], list[MatchJob]] = {}
    for policy, opponent in pairs:
        for m in range(matches):
            focal = m % num_players
            seats = tuple(SeatRef.of(policy if s == focal else opponent) for s in range(num_players))
            job = MatchJob(seats, derive_seed(seed, policy.name, opponent.name, m))
            by_key.setdefault((policy.name, m), []).append(job)
    return [Chunk(game_name, tuple(jobs), limits) for _, jobs in sorted(by_key.items())]


def run_chunks(chunks: Sequence[Chunk], processes: int | None = None,
               progress: ProgressFn | None = None) -> list[MatchResult]:
    """Play all chunks, in a process pool when ``processes`` > 1; results in chunk order."""
    processes = processes or max(1, min(len(chunks), os.cpu_count() or 1))
    total = sum(len(c.jobs) for c in chunks)
    done = 0
    results: list[list[MatchResult]] = [[] for _ in chunks]
    if processes == 1 or len(chunks) == 1:
        for i, chunk in enumerate(chunks):
            results[i] = play_chunk(chunk)
            done += len(chunk.jobs)
            if progress:
                progress(done, total)
    else:
        ctx = multiprocessing.get_context("forkserver")
        with concurrent.futures.ProcessPoolExecutor(max_workers=processes, mp_context=ctx) as pool:
            futures = {pool.submit(play_chunk, chunk): i for i, chunk in enumerate(chunks)}
            for future in concurrent.futures.as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                done += len(chunks[i].jobs)
                if progress:
                    progress(done, total)
    return [r for chunk_results in results for r in chunk_results]


def record(table: PayoffTable, results: Sequence[MatchResult]) -> None:
    """Add match results to a payoff table, both directions of every pairing."""
    for res in results:
        names = res.policies
        for seat, name in enumerate(names):
            others = [s for s in range(len(names)) if names[s] != name]
            if not others:  # self-play: every seat is the same policy
                opponent = name
            else:
                opponent = names[others[0]]
            reason = res.forfeit[1] if res.forfeit and res.forfeit[0] == seat else None
            table.add(name, opponent, res.returns[seat], reason)


class _Seat:
    """A seat of a match in a chunk: a built-in instance or an instance in a worker."""

    __slots__ = ("builtin", "worker", "instance", "spent")

    def __init__(self, builtin=None, worker: PolicyWorker | None = None, instance: int = -1):
        self.builtin = builtin
        self.worker = worker
        self.instance = instance
        self.spent = 0.0  # wall seconds of round trips this seat took part in


Observer = Callable[[int, Sequence, Sequence], None]


def play_chunk(chunk: Chunk, observer: Observer | None = None) -> list[MatchResult]:
    """Play a chunk's matches in lockstep; never raises for a policy's misbehaviour.

    ``observer(match_index, requests, replies)`` is called for every answered round
    (used by ``csro play`` for its trace).
    """
    game = load_game(chunk.game)
    builtins = game.builtins()
    matches = [game.new_match(job.seed) for job in chunk.jobs]
    forfeits: list[tuple[int, str, str] | None] = [None] * len(matches)
    workers: dict[str, PolicyWorker] = {}
    start_failure: dict[str, Forfeit] = {}
    seats: list[list[_Seat]] = []

    def lose(m: int, seat: int, failure: Forfeit) -> None:
        if forfeits[m] is None and not matches[m].over:
            forfeits[m] = (seat, failure.reason.value, failure.detail)
            matches[m].forfeit(seat)

    try:
        for m, job in enumerate(chunk.jobs):
            row = []
            for s, ref in enumerate(job.seats):
                if ref.builtin is not None:
                    row.append(_Seat(builtin=builtins[ref.builtin].instance(s, derive_seed(job.seed, s))))
                    continue
                if ref.name not in workers and ref.name not in start_failure:
                    worker = PolicyWorker(ref.source, ref.class_name, chunk.limits)
                    failure = worker.start()
                    if failure is None:
                        workers[ref.name] = worker
                    else:
                        worker.close()
                        start_failure[ref.name] = failure
                row.append(_Seat(worker=workers.get(ref.name), instance=len(seats) * 16 + s))
            seats.append(row)
        # Compile failures forfeit at once; the others construct their instances.
        for m, job in enumerate(chunk.jobs):
            for s, ref in enumerate(job.seats):
                if ref.name in start_failure:
                    lose(m, s, start_failure[ref.name])
        _round_trip(
            [(m, s, "__init__", ()) for m, row in enumerate(seats) for s, seat in enumerate(row)
             if seat.worker is not None and forfeits[m] is None],
            seats, matches, chunk.limits, lose, wants_action=None)
        while True:
            active = [(m, matches[m].pending()) for m in range(len(matches)) if forfeits[m] is None]
            active = [(m, reqs) for m, reqs in active if reqs]
            if not active:
                break
            calls = [(m, r.seat, r.method, r.args) for m, reqs in active for r in reqs
                     if seats[m][r.seat].worker is not None]
            legal = {(m, r.seat): r.legal for m, reqs in active for r in reqs}
            replies = _round_trip(calls, seats, matches, chunk.limits, lose, wants_action=legal)
            for m, reqs in active:
                if forfeits[m] is not None:
                    continue
                answers = []
                for r in reqs:
                    seat = seats[m][r.seat]
                    answers.append(seat.builtin.respond(r, matches[m]) if seat.builtin is not None
                                   else replies.get((m, r.seat)))
                if observer is not None:
                    observer(m, reqs, answers)
                try:
                    matches[m].answer(answers)
                except IllegalAction as exc:
                    lose(m, exc.seat, Forfeit(Reason.ILLEGAL_ACTION, str(exc)))
    finally:
        for worker in workers.values():
            worker.close()
    return [
        MatchResult(tuple(ref.name for ref in job.seats), tuple(float(x) for x in match.returns()), job.seed, forfeits[m])
        for m, (job, match) in enumerate(zip(chunk.jobs, matches))
    ]


def _round_trip(calls, seats, matches, limits: SandboxLimits, lose, wants_action) -> dict:
    """Send each worker its calls in one batch; forfeit seats whose call failed.

    Returns replies keyed by (match, seat). ``wants_action`` maps (match, seat) to the
    legal strings of an ``act`` request (None for notifications); a non-string reply to
    an action request is MALFORMED.
    """
    by_worker: dict[int, tuple[PolicyWorker, list]] = {}
    for m, s, method, args in calls:
        seat = seats[m][s]
        by_worker.setdefault(id(seat.worker), (seat.worker, []))[1].append((m, s, method, args))
    replies = {}
    for worker, items in by_worker.values():
        started = time.perf_counter()
        results = worker.call([Call(seats[m][s].instance, method, args) for m, s, method, args in items])
        elapsed = time.perf_counter() - started
        for (m, s, method, _), result in zip(items, results):
            seat = seats[m][s]
            seat.spent += elapsed
            if isinstance(result, Forfeit):
                lose(m, s, result)
            elif seat.spent > limits.match_seconds:
                lose(m, s, Forfeit(Reason.TIMEOUT, f"match wall-clock limit {limits.match_seconds}s exceeded"))
            elif wants_action is not None and wants_action.get((m, s)) is not None and not isinstance(result, str):
                lose(m, s, Forfeit(Reason.MALFORMED, f"act returned {type(result).__name__}, not a string"))
            else:
                replies[(m, s)] = result
    return replies
