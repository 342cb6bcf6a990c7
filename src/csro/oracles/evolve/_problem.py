"""What the search engine needs to know about the thing being evolved.

One engine (``_engine``) serves three problems: a CSRO best response (a game policy scored
against sigma, ``csro.oracles.evolve._policy``), CFR hooks (``csro.discover.cfr``) and a
PSRO meta-solver (``csro.discover.psro``). A problem says how a program is shown, extracted,
checked and scored; every method that runs a program does so in sandboxed worker
processes, never in the caller's process.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from csro.llm import Message

from ._database import Program


class Problem(Protocol):
    """A search problem. Scores are dicts of named float components (see ``_database``)."""

    #: The class the program must define (for ``extract_code``).
    class_name: str
    #: Whether stage-2 scores share the full scores' scale (fewer matches: yes; fewer solver
    #: iterations: no, so stage 2 is then compared with the elites' own stage-2 fitness).
    quick_comparable: bool

    def fitness(self, scores: dict) -> float | None:
        """The fitness of complete scores (higher is better); None if a component is missing."""

    def descriptor(self, program: Program) -> tuple[int, ...]:
        """The program's behaviour cell."""

    def task_messages(self) -> list[Message]:
        """The fixed part of every prompt: system message and the task (rules, API, target)."""

    def scores_text(self, scores: dict) -> str:
        """Scores in a few lines, for the prompt and the report."""

    def check(self, sources: Sequence[str]) -> list[str | None]:
        """Cascade stage 1 (compile and smoke test): None for each valid source, else the error."""

    def quick(self, sources: Sequence[str]) -> list[dict]:
        """Cascade stage 2: cheap estimates of the scores (same components and scale)."""

    def full(self, sources: Sequence[str]) -> list[dict]:
        """Cascade stage 3: the full scores."""

    def rewrite_hints(self, grammar: bool) -> tuple[str, str | None]:
        """For full rewrites: the reply's prefill, and a GBNF grammar when ``grammar`` (the
        provider honours one) and the problem has one."""
