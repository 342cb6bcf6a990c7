"""Evolutionary code search (AlphaEvolve-style): one engine for the CSRO oracle and discovery.

- ``_database``: programs, islands, MAP-Elites archives, sampling, re-scoring.
- ``_diff``: SEARCH/REPLACE edits, applied strictly.
- ``_engine``: generations of concurrent LLM mutations and the sandboxed evaluation cascade.
- ``_policy`` / ``_oracle``: the CSRO problem and ``oracle.kind: evolve``.
- ``_frame``: ``oracle.kind: grammar_search``, the same search with the model replaced by the grammar.
- ``csro.discover`` uses the engine for CFR hooks and PSRO meta-solvers.
"""

from ._database import FULL, Program, ProgramDatabase, length_bin
from ._diff import DiffError, Edit, apply_diff, apply_edits, format_edit, parse_diff
from ._engine import DIFF_TOKENS, Budget, Evolution
from ._frame import GrammarSampler, GrammarSearch
from ._oracle import Evolve
from ._problem import Problem

__all__ = [
    "DIFF_TOKENS",
    "FULL", "Budget", "DiffError", "Edit", "Evolution", "Evolve", "GrammarSampler", "GrammarSearch", "Problem", "Program", "ProgramDatabase",
    "apply_diff", "apply_edits", "format_edit", "length_bin", "parse_diff",
]
