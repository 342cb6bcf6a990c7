"""Grammars for constrained decoding, written as rules and rendered to llama.cpp's GBNF.

A grammar is ``Rules``: rule name -> alternatives, each a sequence of items; an item is a
literal (``lit("text")``, stored as ``'"text'``), a rule name (``NAME``, or ``NAME?`` for an
optional one), or a GBNF character class (``[...]`` with an optional ``+`` or ``?``). Kept
as data, the same language can be rendered for the model (``to_gbnf``) and enumerated or
sampled by tests. Used by the oracles' fallback grammars, the games' strict policy grammars
(``CodeGame.policy_grammar``) and discovery's CFR-hook grammar.
"""

from __future__ import annotations

import json

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
