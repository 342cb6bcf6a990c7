"""Text a program controls, made safe to show: ``untrusted``, the one helper of every door.

A policy, a controller, a discovery program or an LLM reply decides the text of its
exception messages, its output, its action strings and what csro records about it. That text
is data: it reaches a terminal (``csro eval``, ``status``, progress lines), JSON and the HTML
report only through ``untrusted``, which

* shows every character a terminal or a renderer would act on, or that a reader cannot see,
  as a visible escape (``\\x1b``, ``\\u202e``, ``\\U000e0041``, like Python's ``repr``):
  C0 controls but newline and tab (ESC, so CSI and OSC sequences, BEL, carriage return,
  backspace), DEL and the C1 controls U+0080-U+009F (a C1 CSI or OSC needs no ESC), the
  format characters (Unicode category Cf: bidi embeddings, overrides and isolates
  U+202A-U+202E and U+2066-U+2069, marks, zero-width spaces and joiners, the byte-order mark,
  tag characters), line and paragraph separators, surrogates, private-use and unassigned code
  points, variation selectors and the blank fillers (Hangul fillers, U+3164, U+FFA0);
* with ``markup=True``, also escapes Rich console markup (``[bold]``, ``[/]``,
  ``[link=...]``), for text put into a string that Rich renders as markup. The consoles that
  show such text are made with ``emoji=False``, so ``:name:`` codes stay text too.

What is stored (the run store, the records repair prompts quote) keeps the text as the
program gave it; the escaping happens where it is shown. Our interpretation: "dangerous" is
anything that is not visible text, so the rule is by Unicode category, not a list of known
sequences, and escaping twice shows the backslash of the first escape as it is.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TypeVar

from rich.markup import escape as _escape_markup

T = TypeVar("T")

_SHOWN_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_KEPT = frozenset("\n\t")
_PLAIN = re.compile(r"[\n\t\x20-\x7e]*\Z")  # printable ASCII: nothing to do


def _hidden(ch: str) -> bool:
    """Whether ``ch`` is shown as an escape (see the module docstring)."""
    if ch in _KEPT:
        return False
    o = ord(ch)
    return (unicodedata.category(ch) in _SHOWN_CATEGORIES or ch in _BLANKS
            or 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF)


def _visible(ch: str) -> str:
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else (f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")


def _safe_str(text: str, markup: bool) -> str:
    if not _PLAIN.match(text):
        text = "".join(_visible(ch) if _hidden(ch) else ch for ch in text)
    return _escape_markup(text) if markup else text


def untrusted(value: T, *, markup: bool = False) -> T:
    """``value`` with every string in it made safe to show: a str, or JSON-like data (dicts,
    lists, tuples; keys included), whose other values (numbers, None, ...) are kept as they
    are. ``markup=True`` also escapes Rich markup (for text inside a Rich markup string)."""
    if isinstance(value, str):
        return _safe_str(value, markup)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {untrusted(k, markup=markup): untrusted(v, markup=markup)  # type: ignore[return-value]
                for k, v in value.items()}
    if isinstance(value, list):
        return [untrusted(v, markup=markup) for v in value]  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(untrusted(v, markup=markup) for v in value)  # type: ignore[return-value]
    return value
