"""SEARCH/REPLACE edits of a parent program: parsed and applied strictly.

AlphaEvolve (Novikov et al. 2025; used as the oracle in Hennes et al., arXiv 2603.10098,
and as the discovery engine in Li et al., arXiv 2602.16928) asks the LLM for edits as
blocks of the form::

    <<<<<<< SEARCH
    lines copied exactly from the parent
    =======
    the lines that replace them
    >>>>>>> REPLACE

Our rules (the papers give the format, not the semantics): a reply must hold at least one
complete block; every SEARCH text must occur in the parent *exactly once* (no fuzzy or
whitespace-insensitive matching: an edit that does not say exactly where it goes is
rejected, and the rejection is recorded as the program's outcome); SEARCH text matches whole
lines only (a fragment of a line is not a match); blocks are applied in
order, each to the result of the previous one. Pure string processing, never exec.
"""

from __future__ import annotations

import dataclasses
import re

from csro.errors import DiffError

SEARCH, DIVIDER, REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"
_MARKER = re.compile(r"^[ \t]*(<{5,9} ?SEARCH|={5,9}|>{5,9} ?REPLACE)[ \t]*$")


@dataclasses.dataclass(frozen=True)
class Edit:
    """One SEARCH/REPLACE block."""

    search: str
    replace: str


def parse_diff(text: str) -> list[Edit]:
    """The blocks of ``text`` in order; DiffError when there are none or one is unclosed."""
    edits: list[Edit] = []
    state, search, replace = "outside", [], []
    for number, line in enumerate(text.splitlines(), 1):
        marker = _MARKER.match(line)
        kind = marker.group(1).strip("<>= ") if marker else None
        if state == "outside":
            if kind == "SEARCH":
                state, search, replace = "search", [], []
            elif kind == "REPLACE":
                raise DiffError(f"line {number}: REPLACE marker without a SEARCH block")
        elif state == "search":
            if kind == "SEARCH":
                raise DiffError(f"line {number}: SEARCH block opened twice")
            if kind == "REPLACE":
                raise DiffError(f"line {number}: REPLACE marker before the ======= divider")
            if kind == "":
                state = "replace"
            else:
                search.append(line)
        else:  # replace
            if kind == "REPLACE":
                edits.append(Edit("\n".join(search), "\n".join(replace)))
                state = "outside"
            elif kind == "SEARCH":
                raise DiffError(f"line {number}: SEARCH marker inside a REPLACE section")
            else:
                replace.append(line)
    if state != "outside":
        raise DiffError("the last SEARCH/REPLACE block is not closed with >>>>>>> REPLACE")
    if not edits:
        raise DiffError("the reply holds no SEARCH/REPLACE block")
    return edits


def apply_edits(source: str, edits: list[Edit]) -> str:
    """``source`` with each edit applied in turn; DiffError naming the first that fails."""
    text = "\n" + source + ("" if source.endswith("\n") else "\n")  # every line between newlines
    for i, edit in enumerate(edits, 1):
        if not edit.search.strip():
            raise DiffError(f"block {i}: the SEARCH section is empty")
        needle = "\n" + edit.search + "\n"
        count = text.count(needle)
        if count == 0:
            first = edit.search.strip().splitlines()[0]
            raise DiffError(f"block {i}: the SEARCH text is not in the parent (it starts {first!r})")
        if count > 1:
            raise DiffError(f"block {i}: the SEARCH text occurs {count} times in the parent; it must be unique")
        text = text.replace(needle, "\n" + edit.replace + "\n" if edit.replace else "\n", 1)
    return text[1:]


def apply_diff(source: str, text: str) -> str:
    """Parse the reply ``text`` and apply its blocks to ``source`` (strict, see the module)."""
    return apply_edits(source, parse_diff(text))


def format_edit(edit: Edit) -> str:
    """The block as the LLM is asked to write it (used in prompts and the report)."""
    return f"{SEARCH}\n{edit.search}\n{DIVIDER}\n{edit.replace}\n{REPLACE}"
