"""Grammar-constrained decoding (llama.cpp GBNF) of a policy: the last resort of a proposal.

Hennes et al. (arXiv 2603.10098) note that weak models write invalid code; this is one of
our remedies (with prefill, examples and repair), used only when a proposal and its repairs
produced no valid program. A grammar removes most of the model's authorship, so it is a
fallback, never the main path.

- A game's own strict grammar where it offers one (``CodeGame.policy_grammar``). RRPS has a
  rule language, valid by construction (measured 10/10 valid for the 0.5B model on this
  machine, and 3/3 in ``bench/valid_rate.py``): a fixed class keeps both histories; the
  model writes an optional strategy comment, up to four ``if COND: return EXPR`` rules over
  the opponent's and its own history, and a final ``return EXPR``; the class plays the rules
  only while they are winning (``csro.games.rrps.rule_header``).
- Other games: a looser skeleton. The class line and every method header of the game's API
  are fixed, in order; each method body is one or more free lines indented under it. It
  keeps the structure, not the semantics: the sandbox check still decides validity.

The grammar is given as ``csro.gbnf.Rules`` and rendered to GBNF, so tests can enumerate or
sample the same language.
"""

from __future__ import annotations

import ast

from csro.games import CodeGame
from csro.gbnf import Rules, lit, to_gbnf

def skeleton_rules(game: CodeGame) -> Rules:
    """The class line and the API's method headers, in order, each over free indented lines."""
    tree = ast.parse(game.api_spec)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == game.policy_class)
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    rules: Rules = {"root": [[lit(f"class {game.policy_class}:\n")] + [f"m{i}" for i in range(len(methods))]],
                    "body": [["line"], ["line", "body"]],
                    "line": [[lit("        "), "[^\\n]+", lit("\n")]]}
    for i, method in enumerate(methods):
        rules[f"m{i}"] = [[lit("\n    " + method_header(method) + "\n"), "body"]]
    return rules


def method_header(method: ast.FunctionDef) -> str:
    """``def name(args) -> ret:`` as written in the API."""
    stub = ast.FunctionDef(method.name, method.args, [ast.Pass()], [], method.returns, None)
    return ast.unparse(ast.fix_missing_locations(stub)).splitlines()[0]


def grammar_for(game: CodeGame) -> tuple[str, str]:
    """``(prefill, gbnf)`` of a grammar-constrained proposal for ``game``: the game's own
    strict grammar where it offers one (``CodeGame.policy_grammar``), else the skeleton."""
    strict = game.policy_grammar()
    if strict is not None:
        header, rules = strict
        return "```python\n" + header, to_gbnf(rules)
    return "```python\nimport random\n\n\n", to_gbnf(skeleton_rules(game))
