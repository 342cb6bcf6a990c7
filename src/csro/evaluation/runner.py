"""The one match runner: batched lockstep play, parallel over processes, seeded.

Matches are grouped into *chunks*: the matches of one focal policy for a block of match
indices against all its opponents (e.g. a policy's match #3 against each of the 43
RoShamBo bots, or its matches #0-63 against one opponent). A chunk is played in
lockstep by one runner process: every round, the pending requests of all its matches
are gathered and each sandboxed policy answers all of its requests in **one** worker
round trip; trusted built-ins answer in-process. The round trips of a chunk's two halves
(``_Lane``) are pipelined, so the runner steps one half while the worker computes the
other. Chunks are spread over a process pool, so cells run in parallel on the cores.

A match's result is a function of its seed alone (issue 28): not of the process, the
node, the chunk, the order, or what a process played before. Its seed is derived from the
run's match root (the run seed keyed with the run's secret, ``csro.seeding.match_root``), the
seated policy names and the match index only; each seat gets a seed derived from it, which
seeds a built-in bot's generator or a code policy's instance. No policy can compute a seed it
was not given (issue 37): the root is secret, and a seat's seed reveals neither its match's
seed nor another seat's. Each chunk starts fresh sandbox workers for the code policies it
needs, and within a worker each instance (one seat of one match) has random streams of its
own (``csro.policies._streams``) and a fresh copy of the policy module wherever state could
pass through it (``csro.policies._sharing``), so neither module globals nor ``random`` are
shared between matches; the chunk layout is therefore free to follow speed. What the worker
does not separate is what an instance reaches on purpose (a standard module's attributes,
``builtins``): with ``SandboxLimits.isolate_matches`` each match's instances get a worker of
their own, so nothing of one match is in the process of another (issue 37 item 3(b); off by
default for its cost, docs/sandbox.md).

The time between a policy's calls is the one input of the referee a policy can read besides
its calls (a clock needs no system call). Within a round the workers get their calls before
the built-ins answer theirs, so what a policy can time before it answers a round is the work
of earlier rounds only (the other seats' compute, whose moves the game then shows it anyway);
docs/sandbox.md measures and bounds this channel.

A policy that fails in any way forfeits that match (``forfeit_returns``) with a recorded
``Reason``; the other matches go on.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import multiprocessing
import os
import threading
from typing import Callable, Sequence

from csro.evaluation.payoff_table import MatchResult
from csro.evaluation.policy_ref import PolicySpec
from csro.games import load_game
from csro.errors import IllegalAction
from csro.seeding import derive_seed
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
class Chunk:
    """Matches played together in lockstep by one runner process (``trace``: keep a
    readable line per round of each match, for ``csro play`` and an oracle's observation)."""

    game: str
    jobs: tuple[MatchJob, ...]
    limits: SandboxLimits
    trace: bool = False


CHUNK_TARGET = 256  # matches per chunk at most, by default: amortises a worker start and round trips
MIN_CHUNK = 8  # matches per chunk at least, where a policy has that many: a worker start is ~45 ms
# With ``SandboxLimits.isolate_matches`` a chunk runs a worker per match at once: small chunks
# keep the processes alive in a runner (and their memory) few, and no start is shared.
ISOLATED_CHUNK_TARGET = 8


def plan_chunks(game_name: str, num_players: int, pairs: Sequence[tuple[PolicySpec, PolicySpec]],
                matches: int, seed: int, limits: SandboxLimits, target: int | None = None,
                parallel: int | None = None) -> list[Chunk]:
    """Chunks for ``matches`` matches of each (policy, opponent) pair; ``seed`` is the match
    root every match seed derives from (``csro.seeding.match_root`` of a run).

    A chunk holds consecutive matches of one policy (match index by match index, each
    against all of its opponents). Each policy's matches are cut into equal chunks of at
    most ``target`` (default ``CHUNK_TARGET``) matches, their number a multiple of
    ``parallel`` (the processes that will play them; default the CPU count) so that every
    process has as much to do, but no chunk under ``MIN_CHUNK`` matches; where
    ``limits.isolate_matches``, at most ``ISOLATED_CHUNK_TARGET`` and no least. The layout is a
    matter of speed only: a match's result does not depend on it (issue 28).

    Two-player games alternate seats (the policy is seat 0 in even matches); in
    n-player games the policy takes seat ``m % n`` and the opponent fills the others.
    """
    jobs_of: dict[str, list[MatchJob]] = {}
    for m in range(matches):
        focal = m % num_players
        for policy, opponent in pairs:
            seats = tuple(SeatRef.of(policy if s == focal else opponent) for s in range(num_players))
            jobs_of.setdefault(policy.name, []).append(MatchJob(seats, derive_seed(seed, policy.name, opponent.name, m)))
    return [Chunk(game_name, part, limits) for name in sorted(jobs_of)
            for part in _cut(jobs_of[name], limits, target, parallel)]


def plan_profiles(game_name: str, profiles: Sequence[Sequence[PolicySpec]], matches: int, seed: int,
                  limits: SandboxLimits, target: int | None = None, parallel: int | None = None) -> list[Chunk]:
    """Chunks for ``matches`` matches of each profile, every policy in its own seat.

    The per-player populations of an n-player or asymmetric game meet as profiles (the
    policy of player p in seat p, never another seat). A match's seed depends on ``seed``
    (the match root), the seated names in order and the match index only; the matches of
    consecutive profiles are cut into chunks as ``plan_chunks`` cuts a policy's.
    """
    jobs = [MatchJob(tuple(SeatRef.of(s) for s in profile), derive_seed(seed, *(s.name for s in profile), m))
            for profile in profiles for m in range(matches)]
    return [Chunk(game_name, part, limits) for part in _cut(jobs, limits, target, parallel)]


def _cut(jobs: list[MatchJob], limits: SandboxLimits, target: int | None,
         parallel: int | None) -> list[tuple[MatchJob, ...]]:
    """``jobs`` in consecutive parts of equal size (within one): at most ``target`` each, as
    many as a multiple of ``parallel``, none under ``MIN_CHUNK`` where there are that many
    (a worker start is shared by a chunk's matches unless ``limits.isolate_matches``)."""
    parallel = parallel or os.cpu_count() or 1
    isolated = limits.isolate_matches
    size = target or (ISOLATED_CHUNK_TARGET if isolated else CHUNK_TARGET)
    parts = parallel * -(-len(jobs) // (parallel * size))
    parts = max(1, min(parts, len(jobs) // (1 if isolated else MIN_CHUNK)))
    step, extra = divmod(len(jobs), parts)
    bounds = [0]
    for i in range(parts):
        bounds.append(bounds[-1] + step + (i < extra))
    return [tuple(jobs[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]


# "fork" starts a pool process in milliseconds, with csro and pyspiel already imported, and
# needs no ``if __name__ == "__main__"`` guard in user scripts; "forkserver" costs ~0.6 s of
# imports per pool. With "fork", CPython's ProcessPoolExecutor starts all its processes
# up front, before its own manager thread; the children only play chunks, so a caller's
# threads (e.g. a Rich progress bar) cannot hold a lock they need.
_START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


def run_chunks(chunks: Sequence[Chunk], processes: int | None = None,
               progress: ProgressFn | None = None) -> list[MatchResult]:
    """Play all chunks, in a process pool when ``processes`` > 1; results in chunk order.

    One process's chunks are played in this process only when no other thread runs here:
    the RoShamBo bots draw from the C library's process-wide ``random()``, which a host's own
    threads may draw from too (a Ray worker's do), so a shared process plays them in a
    forked child, whose only thread is the one that forked it."""
    processes = processes or max(1, min(len(chunks), os.cpu_count() or 1))
    total = sum(len(c.jobs) for c in chunks)
    done = 0
    results: list[list[MatchResult]] = [[] for _ in chunks]
    if (processes == 1 or len(chunks) == 1) and not _threaded():
        for i, chunk in enumerate(chunks):
            results[i] = play_chunk(chunk)
            done += len(chunk.jobs)
            if progress:
                progress(done, total)
    else:
        ctx = multiprocessing.get_context(_START_METHOD)
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(processes, len(chunks)), mp_context=ctx) as pool:
            futures = {pool.submit(play_chunk, chunk): i for i, chunk in enumerate(chunks)}
            for future in concurrent.futures.as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                done += len(chunks[i].jobs)
                if progress:
                    progress(done, total)
    return [r for chunk_results in results for r in chunk_results]


def _threaded() -> bool:
    """Whether this process runs another thread than the caller's (its OS threads, so that
    threads of C libraries count)."""
    try:
        return len(os.listdir("/proc/self/task")) > 1
    except OSError:
        return threading.active_count() > 1


class _Seat:
    """A seat of a match in a chunk: a built-in instance or an instance in a worker.

    ``queue`` is where a worker seat's requests of the current round wait to be sent:
    the batch of its worker for its lane.
    """

    __slots__ = ("builtin", "worker", "instance", "match", "queue", "spent")

    def __init__(self, builtin=None, worker: PolicyWorker | None = None, instance: int = -1,
                 match: int = -1):
        self.builtin = builtin
        self.worker = worker
        self.instance = instance
        self.match = match
        self.queue: list | None = None
        self.spent = 0.0  # wall seconds of round trips this seat took part in


Observer = Callable[[int, Sequence, Sequence], None]

PIPELINE_MIN_MATCHES = 8  # a chunk this large plays in two lanes whose round trips overlap


class _Lane:
    """Some of a chunk's matches, played round by round; one batch per worker in flight.

    A chunk's matches are split into two lanes by index (first half, second half). While
    the workers compute one lane's batches, the runner steps the other lane's OpenSpiel
    states and built-in bots, so the runner process and the sandboxed workers run at the
    same time. A worker receives the calls in the order of one batch per round over all
    matches: lane 0's calls of round r, lane 1's of round r, lane 0's of round r + 1, ...
    (the order does not reach the results: each instance has its own streams, and its own
    module wherever that matters).
    """

    __slots__ = ("rounds", "queues", "sent")

    def __init__(self, indices: range, matches: list, seats: list[list[_Seat]]):
        # (match index, match, requests, answers) of the round in play; None: not asked yet
        self.rounds: list[tuple] = [(m, matches[m], None, None) for m in indices]
        self.queues: dict[PolicyWorker, list] = {}  # the lane's batch to each worker
        for m in indices:
            for seat in seats[m]:
                if seat.worker is not None:
                    seat.queue = self.queues.setdefault(seat.worker, [])
        self.sent: list[tuple[PolicyWorker, list]] = []  # batches awaiting their replies


def play_chunk(chunk: Chunk, observer: Observer | None = None) -> list[MatchResult]:
    """Play a chunk's matches in lockstep; never raises for a policy's misbehaviour.

    ``observer(match_index, requests, replies)`` is called for every answered round; a
    ``trace`` chunk records each round as a line of its match's ``MatchResult.trace``.
    """
    lines: list[list[str]] = [[] for _ in chunk.jobs]
    if chunk.trace:
        observer = _tracer(chunk, lines, observer)
    game = load_game(chunk.game)
    builtins = game.builtins()
    matches = [game.new_match(job.seed) for job in chunk.jobs]
    forfeits: list[tuple[int, str, str] | None] = [None] * len(matches)
    # one worker per policy name, or per (name, match) where matches are isolated (issue 37 3(b))
    workers: dict[tuple[str, int], PolicyWorker] = {}
    start_failure: dict[str, Forfeit] = {}
    seats: list[list[_Seat]] = []
    match_seconds = chunk.limits.match_seconds

    def lose(m: int, seat: int, failure: Forfeit) -> None:
        if forfeits[m] is None and not matches[m].over:
            forfeits[m] = (seat, failure.reason.value, failure.detail)
            matches[m].forfeit(seat)

    def step(lane: _Lane) -> None:
        """Apply the lane's answered round, then start its next one: collect the workers'
        replies, answer each match and ask it again (built-ins answer at once, worker
        seats join their worker's batch), then send the batches."""
        forfeit_cls = Forfeit
        for worker, items in lane.sent:
            results = worker.collect()
            elapsed = worker.last_seconds
            for (seat, r, answers, i), result in zip(items, results):
                seat.spent += elapsed
                if result.__class__ is str or (r.legal is None and result.__class__ is not forfeit_cls):
                    if seat.spent <= match_seconds:
                        answers[i] = result
                        continue
                    result = Forfeit(Reason.TIMEOUT, f"match wall-clock limit {match_seconds}s exceeded")
                elif result.__class__ is not forfeit_cls:
                    result = Forfeit(Reason.MALFORMED, f"{r.method} returned {type(result).__name__}, not a string, "
                                                       f"when called as {_call_text(r)}")
                lose(seat.match, r.seat, result)
            items.clear()
        rounds = []
        local = []  # the built-in seats' requests of the round: (instance, request, match, answers, i)
        for m, match, reqs, answers in lane.rounds:
            if forfeits[m] is not None:
                continue
            if reqs is not None:
                if observer is not None:
                    observer(m, reqs, answers)
                try:
                    match.answer(answers)
                except IllegalAction as exc:
                    lose(m, exc.seat, Forfeit(Reason.ILLEGAL_ACTION, str(exc)))
                    continue
            reqs = match.pending()
            if not reqs:
                continue
            row = seats[m]
            answers = [None] * len(reqs)
            rounds.append((m, match, reqs, answers))
            i = 0
            for r in reqs:
                seat = row[r.seat]
                if seat.builtin is not None:
                    local.append((seat.builtin, r, match, answers, i))
                else:
                    seat.queue.append((seat, r, answers, i))
                i += 1
        sent = []
        for worker, items in lane.queues.items():
            if items:
                worker.submit([(seat.instance, r.method, r.args) for seat, r, _, _ in items])
                sent.append((worker, items))
        # The built-ins answer once the workers have their calls: no built-in's work on a round
        # lies between a policy's calls before it answers that round (the timing channel).
        for builtin, r, match, answers, i in local:
            answers[i] = builtin.respond(r, match)
        lane.rounds, lane.sent = rounds, sent

    try:
        for m, job in enumerate(chunk.jobs):
            row = []
            for s, ref in enumerate(job.seats):
                if ref.builtin is not None:
                    row.append(_Seat(builtin=builtins[ref.builtin].instance(s, derive_seed(job.seed, s))))
                    continue
                key = (ref.name, m if chunk.limits.isolate_matches else -1)
                if key not in workers and ref.name not in start_failure:
                    worker = PolicyWorker(ref.source, ref.class_name, chunk.limits,
                                          seed=derive_seed(ref.name, ref.source) % 2**32)
                    failure = worker.start()
                    if failure is None:
                        workers[key] = worker
                    else:
                        worker.close()
                        start_failure[ref.name] = failure
                if ref.name in start_failure:
                    lose(m, s, start_failure[ref.name])
                row.append(_Seat(worker=workers.get(key), instance=m * len(job.seats) + s, match=m))
            seats.append(row)
        _construct(chunk.jobs, seats, forfeits, lose)
        n = len(matches)
        half = n // 2 if n >= PIPELINE_MIN_MATCHES else n
        lanes = [_Lane(range(half), matches, seats), _Lane(range(half, n), matches, seats)]
        while lanes:
            for lane in lanes:
                step(lane)
            lanes = [lane for lane in lanes if lane.rounds]
    finally:
        for worker in workers.values():
            worker.close()
    return [
        MatchResult(tuple(ref.name for ref in job.seats), tuple(float(x) for x in match.returns()), job.seed, forfeits[m],
                    tuple(lines[m]))
        for m, (job, match) in enumerate(zip(chunk.jobs, matches))
    ]


def _tracer(chunk: Chunk, lines: list[list[str]], then: Observer | None) -> Observer:
    """An observer writing each answered round of match ``m`` as one line of ``lines[m]``."""
    def observe(m: int, requests: Sequence, replies: Sequence) -> None:
        names = [ref.name for ref in chunk.jobs[m].seats]
        parts = []
        for req, reply in zip(requests, replies):
            who = names[req.seat]
            if req.wants_action:
                arg = _short(req.args[0]) if req.args else ""
                parts.append(f"{who} ({req.seat}) {req.method} -> {reply!r}" + (f"   obs={arg}" if arg else ""))
            else:
                parts.append(f"{who} ({req.seat}) {req.method}({_short(list(req.args))})")
        lines[m].append(f"[{len(lines[m]) + 1:4d}] " + " | ".join(parts))
        if then is not None:
            then(m, requests, replies)

    return observe


def _call_text(request) -> str:
    """The call a policy answered wrongly, as Python (so a repair sees the input that broke it)."""
    return _short(f"{request.method}({', '.join(map(repr, request.args))})", 300)


def _short(value: object, width: int = 160) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 1] + "…"


def _construct(jobs: Sequence[MatchJob], seats: list[list[_Seat]], forfeits: list, lose) -> None:
    """Create every code policy's instances (one batched ``__init__`` call per worker), each
    with the random streams of its seat's seed (the seed a built-in in that seat gets)."""
    batches: dict[PolicyWorker, list[tuple[int, int]]] = {}
    for m, row in enumerate(seats):
        for s, seat in enumerate(row):
            if seat.worker is not None and forfeits[m] is None:
                batches.setdefault(seat.worker, []).append((m, s))
    for worker, items in batches.items():
        results = worker.call([Call(seats[m][s].instance, "__init__", (derive_seed(jobs[m].seed, s),))
                               for m, s in items])
        for (m, s), result in zip(items, results):
            if isinstance(result, Forfeit):
                lose(m, s, result)
