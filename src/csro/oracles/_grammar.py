"""Grammar-constrained decoding (llama.cpp GBNF) of a policy: the last resort of a proposal.

Hennes et al. (arXiv 2603.10098) note that weak models write invalid code; this is one of
our remedies (with prefill, examples and repair), used only when a proposal and its repairs
produced no valid program. A grammar removes most of the model's authorship, so it is a
fallback, never the main path.

- RRPS: a strict rule language, valid by construction (measured 10/10 valid for the 0.5B
  model on this machine, and 3/3 in ``bench/valid_rate.py``). A fixed class keeps both histories; the model writes an
  optional strategy comment, up to four ``if COND: return EXPR`` rules over the opponent's
  and its own history, and a final ``return EXPR``. Every sentence of the grammar is a
  program that plays legal moves.
- Other games: a looser skeleton. The class line and every method header of the game's API
  are fixed, in order; each method body is one or more free lines indented under it. It
  keeps the structure, not the semantics: the sandbox check still decides validity.

The grammar is given as ``Rules`` (rule name -> alternatives, each a sequence of literals
and rule names; ``?`` suffixes a rule name to make it optional) and rendered to GBNF, so
tests can enumerate or sample the same language.
"""

from __future__ import annotations

import ast
import json

from csro.games import CodeGame
from csro.games.rrps import RRPSGame

Rules = dict[str, list[list[str]]]
"""Rule name -> alternatives; an item is ``'"text'`` (a literal), ``NAME`` or ``NAME?``,
or ``[...]`` (a GBNF character class, with an optional ``+`` or ``?``)."""

RRPS_HEADER = '''\
import random

MOVES = ["ROCK", "PAPER", "SCISSORS"]
BEATS = {"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}


class Agent:
    """A few rules over both players' histories (written under a grammar)."""

    def __init__(self):
        self.opp = []
        self.mine = []

    def last(self, history):
        return history[-1] if history else "ROCK"

    def most(self, history):
        return max(MOVES, key=history.count)

    def act(self, observation: dict) -> str:
        if observation["opponent_action"] is not None:
            self.opp.append(observation["opponent_action"])
            self.mine.append(observation["my_action"])
'''


def lit(text: str) -> str:
    """A literal item of ``Rules``."""
    return '"' + text


RRPS_RULES: Rules = {
    "root": [["comment?", "rule?", "rule?", "rule?", "rule?", "final"]],
    "comment": [[lit("        # "), "[a-zA-Z ,.'-]+", lit("\n")]],
    "rule": [[lit("        if "), "cond", lit(":\n            return "), "expr", lit("\n")]],
    "final": [[lit("        return "), "expr", lit("\n")]],
    "cond": [["hist", lit(" == "), "move"],
             [lit("len(self.opp) < "), "num"],
             [lit("len(self.opp) % "), "num", lit(" == 0")],
             [lit("random.random() < 0."), "[1-9]"]],
    "hist": [[lit("self.last(self.opp)")], [lit("self.last(self.mine)")], [lit("self.most(self.opp)")],
             [lit("self.most(self.mine)")]],
    "move": [[lit('"ROCK"')], [lit('"PAPER"')], [lit('"SCISSORS"')]],
    "expr": [["move"], [lit("random.choice(MOVES)")], [lit("BEATS["), "hist", lit("]")],
             [lit("BEATS[BEATS["), "hist", lit("]]")]],
    "num": [["[1-9]", "[0-9]?", "[0-9]?"]],
}


def skeleton_rules(game: CodeGame) -> Rules:
    """The class line and the API's method headers, in order, each over free indented lines."""
    tree = ast.parse(game.api_spec)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == game.policy_class)
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    rules: Rules = {"root": [[lit(f"class {game.policy_class}:\n")] + [f"m{i}" for i in range(len(methods))]],
                    "body": [["line"], ["line", "body"]],
                    "line": [[lit("        "), "[^\\n]+", lit("\n")]]}
    for i, method in enumerate(methods):
        rules[f"m{i}"] = [[lit("\n    " + _header(method) + "\n"), "body"]]
    return rules


def _header(method: ast.FunctionDef) -> str:
    """``def name(args) -> ret:`` as written in the API."""
    stub = ast.FunctionDef(method.name, method.args, [ast.Pass()], [], method.returns, None)
    return ast.unparse(ast.fix_missing_locations(stub)).splitlines()[0]


def to_gbnf(rules: Rules) -> str:
    """GBNF text of ``rules`` (literals escaped as JSON strings, which GBNF reads alike)."""
    def item(token: str) -> str:
        return json.dumps(token[1:]) if token.startswith('"') else token

    return "\n".join(f"{name} ::= " + " | ".join(" ".join(item(t) for t in alt) for alt in alts)
                     for name, alts in rules.items()) + "\n"


def grammar_for(game: CodeGame) -> tuple[str, str]:
    """``(prefill, gbnf)`` of a grammar-constrained proposal for ``game``."""
    if isinstance(game, RRPSGame):
        return "```python\n" + RRPS_HEADER, to_gbnf(RRPS_RULES)
    return "```python\nimport random\n\n\n", to_gbnf(skeleton_rules(game))
