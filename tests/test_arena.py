"""The Arena: the compile-and-smoke check in the real sandbox, and every match an oracle
causes going through the run's backend and store."""

from csro.arena import Opponent, Target
from csro.config import OracleConfig
from csro.evaluation import resolve
from csro.games import load_game
from csro.llm import LLMReply, LLMSession
from csro.oracles import OracleContext, get_oracle
from tests.conftest import CountingBackend, ListLog, arena_for


def test_valid_and_each_kind_of_invalid_program(tmp_path):
    rrps = load_game("rrps(num_throws=100)")
    valid = rrps.example_policy
    syntax = "class Agent:\n    def act(self, observation)\n        return 'ROCK'\n"
    raising = "class Agent:\n    def act(self, observation):\n        return ['ROCK'][5]\n"
    illegal = "class Agent:\n    def act(self, observation):\n        return 'rock'\n"
    missing = "class Bot:\n    pass\n"
    with arena_for(rrps, tmp_path / "run", seed=1) as arena:
        errors = arena.check([valid, syntax, raising, illegal, missing, raising])
    assert errors[0] is None
    assert errors[1].startswith("SyntaxError: expected ':' at line 2")
    assert "exception" in errors[2] and "IndexError" in errors[2] and 'line 3' in errors[2]
    assert errors[3].startswith("an illegal action was returned (illegal_action)") and "'rock'" in errors[3]
    assert errors[4] is not None and "compile_error" in errors[4]
    assert errors[5] == errors[2]  # a repeated program is checked once, with the same verdict


def test_leduc_example_is_valid_and_every_method_is_exercised(tmp_path):
    leduc = load_game("leduc(num_hands=5)")
    broken = leduc.example_policy.replace('self.total += observation["game_result"]["returns"][self.player_id]',
                                          'self.total += observation["no_such_key"]')
    with arena_for(leduc, tmp_path / "run") as arena:
        ok, error = arena.check([leduc.example_policy, broken])
    assert ok is None and "KeyError" in error


def test_a_generic_game_is_checked_in_every_seat(tmp_path):
    kuhn = load_game("kuhn_poker")
    second_seat_fails = ("class Agent:\n    def act(self, observation):\n"
                         "        if observation['player'] == 1:\n            raise ValueError('seat 1')\n"
                         "        return observation['legal_actions'][0]\n")
    with arena_for(kuhn, tmp_path / "run") as arena:
        assert kuhn.check_matches == 2
        error = arena.check([second_seat_fails])[0]
    assert error is not None and "seat 1" in error



class OneProgram:
    """An LLM that answers every call with the same program (and says nothing else)."""

    grammar = False

    def __init__(self, source):
        self.source = source

    def complete(self, request):
        return self.complete_many([request])[0]

    def complete_many(self, requests):
        text = "```python\n" + self.source + "```"
        return [LLMReply(r.key, text if not r.key.step.startswith("diagnose") else "1. 2. 3.", "fake", "fake")
                for r in requests]



def test_every_match_an_oracle_causes_goes_through_the_backend_and_the_store(tmp_path):
    """reflect checks, evaluates and traces: each match is played by the run's backend and
    stored in the run store (phases check, oracle, trace)."""
    rrps = load_game("rrps(num_throws=50)")
    backend = CountingBackend()
    losing = "class Agent:\n    def act(self, observation):\n        return 'SCISSORS'\n"
    with arena_for(rrps, tmp_path / "run", backend=backend, matches=2) as arena:
        target = Target(1, 0, (Opponent("p0", 1.0, resolve("builtin:rockbot", rrps), "always ROCK"),))
        ctx = OracleContext(rrps, target, LLMSession(OneProgram(losing), 1, 0.8, 3), arena,
                            OracleConfig(kind="reflect", prompt="plain", max_refinements=1), ListLog())
        result = get_oracle("reflect").best_response(ctx)
        store = arena.sim.store
        stored = {phase: len(store.matches(phase)) for phase in ("check", "oracle", "trace")}
    assert result.source == losing and result.feedback.utility == -50.0
    assert stored == {"check": 1, "oracle": 2, "trace": 1}
    assert backend.played == sum(stored.values())
