"""The role of an LLM call, read from its call key's step, in one place for the store, the
budget, ``csro status`` and the report.

The oracles name their steps (``csro.oracles``, ``csro.oracles.evolve``, ``csro.robots``):
``describe-NAME`` (an opponent's description, the paper's "description" conditioning),
``propose``, ``repair-J-R``, ``refine-J`` (LinearRefinement's M rounds), ``grammar-J`` (the
grammar-constrained fallback after failed repairs), ``diagnose-J`` and ``rewrite-J``
(act-observe-rewrite), ``evolve-G-I`` (an evolutionary mutation). A step of another shape
is ``other``.
"""

from __future__ import annotations

ROLES = ("description", "proposal", "repair", "refinement", "fallback", "diagnosis", "rewrite", "mutation", "other")

_BY_STEP = {"describe": "description", "propose": "proposal", "repair": "repair", "refine": "refinement",
            "grammar": "fallback", "diagnose": "diagnosis", "rewrite": "rewrite", "evolve": "mutation"}


def role_of(step: str) -> str:
    """``refine-3`` -> ``refinement``, ``evolve-0-1`` -> ``mutation``, ``describe-p2`` -> ``description``."""
    return _BY_STEP.get(step.split("-", 1)[0], "other")
