"""The match runner: reproducibility, batching, forfeits, seats, real sandbox workers."""

import pytest

from csro.evaluation import evaluate, resolve
from csro.evaluation.policy_ref import code_policy
from csro.evaluation.runner import plan_chunks, run_chunks
from csro.games import load_game
from csro.policies import SandboxLimits

FAST = SandboxLimits(call_seconds=5.0, match_seconds=30.0)

ROCK_ONLY = """
class Agent:
    def act(self, observation):
        return 'ROCK'
"""

SYNTAX_ERROR = "class Agent:\n    def act(self, observation) return 'ROCK'\n"

ILLEGAL = """
class Agent:
    def act(self, observation):
        return 'LIZARD'
"""

NOT_A_STRING = """
class Agent:
    def act(self, observation):
        return 42
"""

COPY_OPPONENT = """
class Agent:
    def __init__(self):
        self.n = 0
    def act(self, observation):
        self.n += 1
        return observation['opponent_action'] or 'PAPER'
"""


@pytest.fixture(scope="module")
def rrps():
    return load_game("rrps")


def _bots(game, names):
    return [resolve(f"builtin:{n}", game) for n in names]


@pytest.mark.slow
def test_same_seed_same_returns_whatever_the_processes(rrps):
    policy = code_policy("copy", COPY_OPPONENT, rrps)
    opponents = _bots(rrps, ["rotatebot", "randbot", "greenberg"])
    one = evaluate(rrps, [policy], opponents, matches=2, seed=7, processes=1, limits=FAST)
    two = evaluate(rrps, [policy], opponents, matches=2, seed=7, processes=2, limits=FAST)
    assert [r.returns for r in one.results] == [r.returns for r in two.results]
    other = evaluate(rrps, [policy], opponents, matches=2, seed=8, processes=1, limits=FAST)
    assert [r.seed for r in other.results] != [r.seed for r in one.results]


def test_rock_only_loses_to_paper_everything(rrps):
    rock = code_policy("rock", ROCK_ONLY, rrps)
    result = evaluate(rrps, [rock], _bots(rrps, ["rotatebot"]), matches=2, processes=1, limits=FAST)
    # rotatebot cycles R, P, S: rock ties, loses, wins in turn -> about 0 over 1000 throws.
    assert abs(result.scores[0].pop_return) <= 2
    assert result.table.forfeits("rock") == {}


@pytest.mark.parametrize("source, reason", [
    (SYNTAX_ERROR, "compile_error"),
    (ILLEGAL, "illegal_action"),
    (NOT_A_STRING, "malformed"),
])
def test_a_failing_policy_forfeits_and_the_others_complete(rrps, source, reason):
    bad = code_policy("bad", source, rrps)
    good = code_policy("good", COPY_OPPONENT, rrps)
    result = evaluate(rrps, [bad, good], _bots(rrps, ["rotatebot", "randbot"]), matches=2, processes=2, limits=FAST)
    bad_score, good_score = result.scores
    assert result.table.forfeits("bad") == {reason: 4}
    assert bad_score.pop_return == -1000  # a forfeit scores the game's minimum
    assert result.table.forfeits("good") == {}
    assert result.table.count("good", "builtin:randbot") == 2
    assert result.forfeit_details("bad")[0]["reason"] == reason


def test_a_reply_of_the_wrong_type_names_the_call_that_returned_it(rrps):
    bad = code_policy("bad", NOT_A_STRING, rrps)
    result = evaluate(rrps, [bad], _bots(rrps, ["rotatebot"]), matches=1, processes=1, limits=FAST)
    detail = result.forfeit_details("bad")[0]["detail"]
    assert detail == "act returned int, not a string, when called as act({'my_action': None, 'opponent_action': None})"


def test_two_player_seats_alternate(rrps):
    policy, bot = code_policy("rock", ROCK_ONLY, rrps), _bots(rrps, ["rotatebot"])[0]
    chunks = plan_chunks("rrps", 2, [(policy, bot)], 4, 0, FAST)
    seats = [job.seats[0].name for chunk in chunks for job in chunk.jobs]
    assert seats == ["rock", "builtin:rotatebot", "rock", "builtin:rotatebot"]
    results = run_chunks(chunks, processes=1)
    assert all(sum(r.returns) == 0 for r in results)


def test_leduc_code_policy_against_population():
    leduc = load_game("leduc")
    policy = resolve("examples/policies/leduc_simple.py", leduc)
    opponents = [resolve("builtin:always_call", leduc), resolve("builtin:always_fold", leduc)]
    result = evaluate(leduc, [policy], opponents, matches=2, processes=1, limits=FAST)
    assert result.table.forfeits(policy.name) == {}
    assert result.scores[0].matches == 4


def test_generic_kuhn_with_code_policy():
    kuhn = load_game("kuhn_poker")
    policy = resolve("examples/policies/kuhn_simple.py", kuhn)
    result = evaluate(kuhn, [policy], [resolve("builtin:random", kuhn)], matches=600, processes=2, limits=FAST)
    assert result.table.forfeits(policy.name) == {}
    assert result.scores[0].pop_return > 0  # a sensible Kuhn policy beats uniform random


HOSTILE = {
    "fork": ("import os\nclass Agent:\n    def act(self, o):\n        os.fork()\n        return 'ROCK'\n", "forbidden"),
    "loop": ("class Agent:\n    def act(self, o):\n        while True:\n            pass\n", "timeout"),
    "exit": ("import sys\nclass Agent:\n    def act(self, o):\n        sys.exit(3)\n", "crash"),
    "passwd": ("class Agent:\n    def act(self, o):\n        return open('/etc/passwd').read(8)\n", "forbidden"),
    "raises": ("class Agent:\n    def act(self, o):\n        return 1 / 0\n", "exception"),
    "memory": ("class Agent:\n    def act(self, o):\n        x = bytearray(2 * 1024 ** 3)\n", "memory"),
}


def test_hostile_policies_forfeit_in_a_real_evaluation_and_the_good_one_completes(rrps):
    limits = SandboxLimits(call_seconds=1.0, memory_mb=384, match_seconds=30.0)
    hostile = [code_policy(name, src, rrps) for name, (src, _) in HOSTILE.items()]
    good = code_policy("good", COPY_OPPONENT, rrps)
    result = evaluate(rrps, [*hostile, good], _bots(rrps, ["rotatebot", "randbot"]), matches=1,
                      processes=2, limits=limits)
    for name, (_, reason) in HOSTILE.items():
        assert result.table.forfeits(name) == {reason: 2}, name
    assert result.table.forfeits("good") == {}
    assert result.table.count("good", "builtin:rotatebot") == 1
    assert result.scores[-1].pop_return > -1000


# About half of its instances (by their own seeded streams) end the worker at their first throw.
EXIT_IN_SOME_MATCHES = """
import random
import sys

class Agent:
    def __init__(self):
        self.leave = random.random() < 0.5

    def act(self, observation):
        if self.leave:
            sys.exit(3)
        return 'PAPER'
"""


def test_with_a_worker_per_match_a_crash_forfeits_its_own_match_only(rrps):
    policy = code_policy("leaver", EXIT_IN_SOME_MATCHES, rrps)
    pairs = [(policy, resolve("builtin:rockbot", rrps))]

    def outcomes(limits):  # per match: "crash", or the leaver's return
        rows = run_chunks(plan_chunks(rrps.name, 2, pairs, 8, 2, limits, None, 1), processes=1)
        return [r.forfeit[1] if r.forfeit else r.returns[r.policies.index("leaver")] for r in rows]

    shared = outcomes(FAST)
    isolated = outcomes(SandboxLimits(call_seconds=5.0, match_seconds=30.0, isolate_matches=True))
    assert set(shared) == {"crash"}  # one worker for the 8 matches: the first exit ends them all
    assert set(isolated) == {"crash", 1000.0}  # the others beat rockbot at every throw
