"""Parsing a number out of a short reply (routers, selectors, solvers)."""

from __future__ import annotations

import re

_INT = re.compile(r"-?\d+")


def first_int(text: str) -> int | None:
    """The first integer in ``text``, or None."""
    m = _INT.search(text)
    return int(m.group(0)) if m else None
