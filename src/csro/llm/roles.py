"""The role of an LLM call (one of ``csro.config.ROLES``), read from its call key's step, in one
place for the store, the budget, ``csro status`` and the report.

The oracles name their steps (``csro.oracles``, ``csro.oracles.evolve``, ``csro.robots``):
``describe-NAME`` (an opponent's description, the paper's "description" conditioning),
``propose``, ``repair-J-R``, ``refine-J`` (LinearRefinement's M rounds), ``grammar-J`` (the
grammar-constrained fallback after failed repairs), ``diagnose-J`` and ``rewrite-J``
(act-observe-rewrite), ``evolve-G-I`` (an evolutionary mutation) and ``repair-evolve-G-I-R``
(its repair). In games with one
population per player the step carries the seat first (``seat1-propose``, ``csro.psro``).
A step of another shape is ``other``.
"""

from __future__ import annotations

import re

_BY_STEP = {"describe": "description", "propose": "proposal", "repair": "repair", "refine": "refinement",
            "grammar": "fallback", "diagnose": "diagnosis", "rewrite": "rewrite", "evolve": "mutation"}


_SEAT = re.compile(r"^seat[0-9]+-")


def role_of(step: str) -> str:
    """``refine-3`` -> ``refinement``, ``evolve-0-1`` -> ``mutation``, ``describe-p2`` -> ``description``,
    ``seat2-repair-0-1`` -> ``repair``."""
    return _BY_STEP.get(_SEAT.sub("", step).split("-", 1)[0], "other")
