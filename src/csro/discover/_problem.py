"""What CFR-hook and meta-solver discovery share: games, fitness, cascade, parallel sandboxed runs.

Li et al. (arXiv 2602.16928): fitness = the mean over the training games of -exploitability
(NashConv / N) after K iterations. Our cascade (the paper's is not described): stage 1 runs
the program for a few iterations on the first training game (it must run and answer valid
data), stage 2 for ``quick_fraction * K`` iterations on every training game, stage 3 for K.
A stage-2 fitness is on another scale than a stage-3 one (fewer iterations, higher
exploitability), so programs are compared on the stage they share (``quick_comparable``).
The behaviour cell is (code length, the number of training games on which the program beats
the reference algorithm's exploitability at K).

Scores are ``{suite game name: exploitability}``; a game whose run failed is missing from
them, so the program has no fitness.
"""

from __future__ import annotations

import abc
import concurrent.futures
import os
from typing import Sequence

from csro.config import EvolveConfig
from csro.llm import Message
from csro.oracles.evolve import Program, length_bin
from csro.policies import SandboxLimits
from csro.solvers.suite import SuiteGame

from ._sandboxed import ProgramFailure

SMOKE_ITERATIONS = 3


class SuiteProblem(abc.ABC):
    """A program evaluated by exploitability on suite games; subclasses run one game."""

    class_name: str
    quick_comparable = False

    def __init__(self, train: Sequence[SuiteGame], k: int, quick_fraction: float, evolve: EvolveConfig,
                 limits: SandboxLimits, reference: dict[str, float], workers: int | None = None):
        self.train = tuple(train)
        self.k = k
        self.k_quick = max(1, round(k * quick_fraction))
        self.evolve = evolve
        self.limits = limits
        self.reference = reference
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))

    # -- one run of one program on one game ---------------------------------------------------
    @abc.abstractmethod
    def curve(self, source: str, game: SuiteGame, iterations: int, checkpoints: Sequence[int]) -> list[float]:
        """Exploitability after each checkpoint; raises ProgramFailure."""

    #: The search space, for the prompt: the class to write and how it is called.
    api: str
    #: The starting program (a library algorithm, written as a program of the search space).
    seed_program: str
    #: ``(prefill, gbnf)`` of grammar-constrained rewrites for the embedded model, if any.
    rewrite_grammar: tuple[str, str] | None = None

    @abc.abstractmethod
    def fitness_text(self) -> str:
        """What fitness means, one sentence starting "The fitness is"."""

    def task_text(self) -> str:
        games = ", ".join(g.game for g in self.train)
        return f"{self.api}\n{self.fitness_text()} after {self.k} iterations on these games: {games}. Lower is better."

    # -- the Problem protocol -------------------------------------------------------------------
    def fitness(self, scores: dict) -> float | None:
        if any(g.name not in scores for g in self.train):
            return None
        return -sum(scores[g.name] for g in self.train) / len(self.train)

    def descriptor(self, program: Program) -> tuple[int, ...]:
        beaten = sum(program.scores.get(g.name, float("inf")) < self.reference.get(g.name, float("-inf"))
                     for g in self.train)
        return (length_bin(program.source, self.evolve.length_bins), beaten)

    def task_messages(self) -> list[Message]:
        return [Message("system", "You are an expert in computational game theory who improves equilibrium-finding "
                                  "algorithms written in Python with numpy. You answer with code only."),
                Message("user", self.task_text())]

    def scores_text(self, scores: dict) -> str:
        lines = ["Its exploitability (lower is better) on each training game, and the reference's:"]
        lines += [f"- {g.name}: {scores[g.name]:.3g} (reference {self.reference.get(g.name, float('nan')):.3g})"
                  for g in self.train if g.name in scores]
        return "\n".join(lines)

    def check(self, sources: Sequence[str]) -> list[str | None]:
        def one(source: str) -> str | None:
            try:
                self.curve(source, self.train[0], SMOKE_ITERATIONS, (SMOKE_ITERATIONS,))
            except ProgramFailure as exc:
                return str(exc)
            return None
        return self._map(one, sources)

    def quick(self, sources: Sequence[str]) -> list[dict]:
        return self._scores(sources, self.k_quick)

    def full(self, sources: Sequence[str]) -> list[dict]:
        return self._scores(sources, self.k)

    def rewrite_hints(self, grammar: bool) -> tuple[str, str | None]:
        if grammar and self.rewrite_grammar is not None:
            return self.rewrite_grammar
        return f"```python\nimport numpy as np\n\n\nclass {self.class_name}:\n", None

    # -- helpers ----------------------------------------------------------------------------------
    def _scores(self, sources: Sequence[str], iterations: int) -> list[dict]:
        jobs = [(s, g) for s in sources for g in self.train]

        def one(job):
            source, game = job
            try:
                return self.curve(source, game, iterations, (iterations,))[-1]
            except ProgramFailure:
                return None

        values = self._map(one, jobs)
        out = [{} for _ in sources]
        for (source, game), value, i in zip(jobs, values, [i for i in range(len(sources)) for _ in self.train]):
            if value is not None:
                out[i][game.name] = value
        return out

    def _map(self, fn, items):
        if len(items) <= 1:
            return [fn(x) for x in items]
        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(fn, items))
