"""The fallback grammars: the RRPS rule language is valid by construction (sampled, then
checked in the real sandbox); other games get their API's method headers, in order."""

import random

from csro.games import load_game
from csro.gbnf import sample
from csro.oracles._grammar import grammar_for, skeleton_rules, to_gbnf
from tests.conftest import arena_for


def test_every_sampled_rrps_rule_program_is_valid(rrps, tmp_path):
    header, rules = rrps.policy_grammar()
    rng = random.Random(0)
    programs = [header + sample(rules, rng) for _ in range(24)]
    assert len(set(programs)) == len(programs)
    with arena_for(rrps, tmp_path / "run", seed=3) as arena:
        assert arena.check(programs) == [None] * len(programs)


def test_rrps_grammar_is_rendered_with_escaped_literals(rrps):
    RRPS_HEADER, RRPS_RULES = rrps.policy_grammar()
    prefill, gbnf = grammar_for(rrps)
    assert prefill == "```python\n" + RRPS_HEADER
    lines = gbnf.splitlines()
    assert lines[0] == 'root ::= comment? rule? rule? rule? rule? final'
    assert 'move ::= "\\"ROCK\\"" | "\\"PAPER\\"" | "\\"SCISSORS\\""' in lines
    assert 'rule ::= "        if " cond ":\\n            return " expr "\\n"' in lines
    assert {ln.split(" ::= ")[0] for ln in lines} == set(RRPS_RULES)


def test_other_games_get_the_api_skeleton():
    leduc = load_game("leduc")
    rules = skeleton_rules(leduc)
    headers = [rules[f"m{i}"][0][0] for i in range(4)]
    assert headers == ['"\n    def __init__(self):\n', '"\n    def restart(self, player_id: int) -> None:\n',
                       '"\n    def act(self, observation: dict) -> str:\n',
                       '"\n    def receive_outcome(self, observation: dict) -> None:\n']
    assert rules["root"][0][0] == '"class RepeatedLeducPokerBot:\n'
    prefill, gbnf = grammar_for(leduc)
    assert prefill.startswith("```python\n") and "line ::= \"        \" [^\\n]+ \"\\n\"" in gbnf
