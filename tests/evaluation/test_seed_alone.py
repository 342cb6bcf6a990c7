"""A match's result is a function of its seed alone (issue 28).

Not of the worker it shares with other matches, the chunk layout, the number of processes,
the order of the calls, or a host thread drawing from the C library's ``random()`` beside
the RoShamBo bots. Real sandboxed workers, real OpenSpiel bots.
"""

from __future__ import annotations

import ctypes
import dataclasses
import threading

import pytest

from csro import __version__
from csro.errors import CsroError
from csro.evaluation import resolve
from csro.evaluation.backends import play_on_node
from csro.evaluation.policy_ref import code_policy
from csro.evaluation.runner import ISOLATED_CHUNK_TARGET, plan_chunks, run_chunks
from csro.games import load_game
from csro.policies import Call, PolicyWorker, SandboxLimits

LIMITS = SandboxLimits(call_seconds=20.0, match_seconds=120.0)

# Every kind of randomness and shared state a policy can reach without the system's entropy:
# module-level random, an unseeded random.Random(), random.seed() without an argument, NumPy's
# global generator and an unseeded default_rng(), a module global and a class attribute that
# every instance mutates.
RANDOM_EVERYWHERE = """
import random
import numpy as np

PLAYED = []
BIAS = random.random()

class Agent:
    seen = []

    def __init__(self):
        random.seed()
        self.mine = random.Random()
        self.gen = np.random.default_rng()

    def act(self, observation):
        PLAYED.append(1)
        self.seen.append(observation["opponent_action"])
        r = (random.random() + self.mine.random() + float(np.random.rand()) + self.gen.random()
             + BIAS + len(PLAYED) % 3 + len(self.seen) % 5) % 3
        return ("ROCK", "PAPER", "SCISSORS")[int(r)]
"""


def _instance_replies(seeds: list[int], order: list[int], rounds: int = 6) -> dict[int, list]:
    """Replies of one worker's instances made with ``seeds``, asked in ``order`` each round."""
    worker = PolicyWorker(RANDOM_EVERYWHERE, "Agent", LIMITS)
    try:
        assert worker.start() is None
        assert worker.call([Call(i, "__init__", (s,)) for i, s in enumerate(seeds)]) == [None] * len(seeds)
        replies: dict[int, list] = {i: [] for i in range(len(seeds))}
        for _ in range(rounds):
            for i in order:
                replies[i] += worker.call([Call(i, "act", ({"opponent_action": "ROCK"},))])
    finally:
        worker.close()
    return {seeds[i]: r for i, r in replies.items()}


def test_an_instance_does_what_its_seed_says_whoever_shares_its_worker():
    alone = _instance_replies([11], [0])
    crowded = _instance_replies([5, 11, 7], [2, 1, 0])
    reordered = _instance_replies([7, 11], [0, 1])
    assert crowded[11] == alone[11] == reordered[11]
    assert crowded[7] == reordered[7]
    assert len({tuple(r) for r in crowded.values()}) == 3  # different seeds, different streams


@pytest.fixture(scope="module")
def rrps():
    return load_game("rrps(num_throws=60)")


def _rows(chunks, processes):
    return sorted((r.policies, r.seed, r.returns, r.forfeit) for r in run_chunks(chunks, processes=processes))


def test_same_rows_for_any_chunk_size_and_process_count(rrps):
    policy = code_policy("everywhere", RANDOM_EVERYWHERE, rrps)
    pairs = [(policy, resolve(f"builtin:{b}", rrps)) for b in ("randbot", "iocainebot", "markovbails", "random")]
    pairs.append((policy, policy))
    plans = [plan_chunks(rrps.name, 2, pairs, 6, 3, LIMITS, target, parallel)
             for target, parallel in ((None, 2), (10, 1), (None, 1))]
    assert len({len(chunks) for chunks in plans}) == 3  # three different layouts
    reference = _rows(plans[0], 2)
    assert _rows(plans[1], 2) == reference
    assert _rows(plans[2], 1) == reference
    assert _rows(plans[1][::-1], 1) == reference
    assert len({r[2] for r in reference}) > 3  # the returns vary: the randomness is there


def test_a_worker_per_match_plays_the_same_rows(rrps):
    """``isolate_matches`` changes which process hosts an instance, not what it plays: the
    same rows as the batched worker, self-play included, in chunks of a few matches."""
    policy = code_policy("everywhere", RANDOM_EVERYWHERE, rrps)
    pairs = [(policy, resolve("builtin:randbot", rrps)), (policy, resolve("builtin:random", rrps)), (policy, policy)]
    isolated = plan_chunks(rrps.name, 2, pairs, 4, 5, dataclasses.replace(LIMITS, isolate_matches=True), None, 2)
    assert max(len(c.jobs) for c in isolated) <= ISOLATED_CHUNK_TARGET
    assert _rows(isolated, 2) == _rows(plan_chunks(rrps.name, 2, pairs, 4, 5, LIMITS, None, 2), 2)


def test_a_thread_drawing_from_c_random_does_not_move_the_bots(rrps):
    """What a Ray worker's own threads did to the RoShamBo bots: this process's chunks go to a
    forked child when another thread runs here."""
    pairs = [(resolve("builtin:randbot", rrps), resolve(f"builtin:{b}", rrps))
             for b in ("markovbails", "adddriftbot2", "actr_lag2_decay", "switchalot")]
    chunks = plan_chunks(rrps.name, 2, pairs, 4, 9, LIMITS)
    quiet = _rows(chunks, 1)
    libc = ctypes.CDLL(None)
    stop = threading.Event()

    def draw():
        while not stop.is_set():
            libc.random()

    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        busy = _rows(chunks, 1)
    finally:
        stop.set()
        thread.join()
    assert busy == quiet


def test_a_node_with_another_csro_refuses_to_play_naming_both_versions(rrps):
    chunk = plan_chunks(rrps.name, 2, [(resolve("builtin:rockbot", rrps), resolve("builtin:randbot", rrps))],
                        1, 0, LIMITS)[0]
    with pytest.raises(CsroError, match=rf"driver runs csro 0\.0\.1, the Ray node .* has csro {__version__}"):
        play_on_node(chunk, "0.0.1")
    assert len(play_on_node(chunk, __version__)) == 1
