"""Grammars for constrained decoding, written as rules and rendered to llama.cpp's GBNF.

A grammar is ``Rules``: rule name -> alternatives, each a sequence of items; an item is a
literal (``lit("text")``, stored as ``'"text'``), a rule name (``NAME``, or ``NAME?`` for an
optional one), or a GBNF character class (``[...]`` with an optional ``+`` or ``?``). Kept
as data, the same language can be rendered for the model (``to_gbnf``) and enumerated or
sampled (``sample``, for tests and benchmarks). Used by the oracles' fallback grammars, the
games' strict policy grammars (``CodeGame.policy_grammar``) and discovery's CFR-hook grammar.
"""

from __future__ import annotations

import json
import random
import re
import string

Rules = dict[str, list[list[str]]]
"""Rule name -> alternatives; an item is ``'"text'`` (a literal), ``NAME`` or ``NAME?``,
or ``[...]`` (a GBNF character class, with an optional ``+`` or ``?``)."""


def lit(text: str) -> str:
    """A literal item of ``Rules``."""
    return '"' + text


def to_gbnf(rules: Rules) -> str:
    """GBNF text of ``rules`` (literals escaped as JSON strings, which GBNF reads alike)."""
    def item(token: str) -> str:
        return json.dumps(token[1:]) if token.startswith('"') else token

    return "\n".join(f"{name} ::= " + " | ".join(" ".join(item(t) for t in alt) for alt in alts)
                     for name, alts in rules.items()) + "\n"


_CLASS_CHARS = string.ascii_letters + string.digits + " ,.'-"


def sample(rules: Rules, rng: random.Random, name: str = "root") -> str:
    """A random sentence of ``rules``: alternatives uniformly, an optional item half the time,
    a character class's characters from letters, digits and `` ,.'-`` (1-12 of them for ``+``)."""
    out = []
    for item in rng.choice(rules[name]):
        if item.startswith('"'):
            out.append(item[1:])
            continue
        optional, repeated = item.endswith("?"), item.endswith("+")
        token = item.rstrip("?+")
        if optional and rng.random() < 0.5:
            continue
        if token.startswith("["):
            chars = [c for c in _CLASS_CHARS if re.fullmatch(token, c)]
            out.append("".join(rng.choice(chars) for _ in range(rng.randint(1, 12) if repeated else 1)))
        else:
            out.append(sample(rules, rng, token))
    return "".join(out)
