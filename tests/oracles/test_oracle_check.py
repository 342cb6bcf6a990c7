"""The compile-and-smoke check, in the real sandbox."""

from csro.games import load_game
from csro.oracles import check_program, check_programs


def test_valid_and_each_kind_of_invalid_program(rrps):
    valid = rrps.example_policy
    syntax = "class Agent:\n    def act(self, observation)\n        return 'ROCK'\n"
    raising = "class Agent:\n    def act(self, observation):\n        return ['ROCK'][5]\n"
    illegal = "class Agent:\n    def act(self, observation):\n        return 'rock'\n"
    missing = "class Bot:\n    pass\n"
    errors = check_programs(rrps, [valid, syntax, raising, illegal, missing], seed=1)
    assert errors[0] is None
    assert errors[1].startswith("SyntaxError: expected ':' at line 2")
    assert "exception" in errors[2] and "IndexError" in errors[2] and 'line 3' in errors[2]
    assert errors[3].startswith("an illegal action was returned (illegal_action)") and "'rock'" in errors[3]
    assert errors[4] is not None and "compile_error" in errors[4]


def test_leduc_example_is_valid_and_every_method_is_exercised():
    leduc = load_game("leduc(num_hands=5)")
    assert check_program(leduc, leduc.example_policy, seed=0) is None
    broken = leduc.example_policy.replace('self.total += observation["game_result"]["returns"][self.player_id]',
                                          'self.total += observation["no_such_key"]')
    assert "KeyError" in check_program(leduc, broken, seed=0)
