"""The program database of the evolutionary search: islands, elite archives, sampling.

AlphaEvolve (Novikov et al. 2025) and FunSearch (Romera-Paredes et al. 2024) keep programs
on islands that evolve apart and exchange their best periodically, and (AlphaEvolve, after
MAP-Elites, Mouret & Clune 2015) an archive of elites per cell of a behaviour grid. Neither
is public; this is our design:

- Every program ever produced is kept (``Program``), valid or not, with its lineage.
- A program's *scores* are named components (per-opponent mean returns in CSRO; per-game
  exploitability in CFR discovery). Its *fitness* is not stored with it but computed from
  the scores by the current ``FitnessFn``: when the target changes (a new sigma in PSRO),
  ``rescore`` recomputes every fitness from the stored scores without simulating anything,
  and the programs whose scores lack a component the new target needs are listed by
  ``missing`` so only those cells are simulated (``Program.scores`` is then extended).
- The archive of an island maps each behaviour cell (``descriptor``) to its fittest fully
  evaluated program. It is a view computed on demand, so it always agrees with the
  current fitness; it carries over between PSRO iterations because programs do.
- Parents: with probability ``exploit`` a tournament over the island's elites (fitter wins),
  else a uniform draw over its cells (exploration of the behaviour grid). Inspirations: the
  island's best and random elites of other cells, never the parent itself.
- Migration: the best elite of island i is copied (a new program, mutation ``migrant``) to
  island (i + 1) mod n, a ring as in FunSearch/OpenEvolve.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Callable, Iterable, Sequence

FitnessFn = Callable[[dict], "float | None"]
"""Scores -> fitness, or None when the scores lack a component the target needs."""
DescriptorFn = Callable[["Program"], tuple]
"""Program -> its behaviour cell under the current target (tuple of small ints)."""

STATUSES = ("ok", "seed", "migrant", "apply_failed", "no_code", "invalid", "llm_error", "not_promising", "eval_failed")
FULL = 3  # cascade stage of a fully evaluated program


@dataclasses.dataclass
class Program:
    """One program of the search and how it came to be.

    Attributes:
      id: unique in the run (``e<iteration>.<generation>.<island>.<slot>``, ``seed...``).
      iteration: the PSRO iteration it was made in (0 for discovery runs and seeds).
      generation: the generation within that iteration (-1 for seeds).
      island: the island it lives on.
      source: the program (None when no program could be made: failed diff, no code).
      parent: the id of the program it was mutated from.
      inspirations: ids of the programs shown to the LLM beside the parent.
      mutation: ``seed``, ``diff``, ``rewrite`` or ``migrant``.
      status: ``ok`` (fully evaluated) or why it stopped (``STATUSES``).
      stage: the last cascade stage it passed (0 none, 1 compile+smoke, 2 quick, 3 full).
      scores: the named score components (extended when new opponents appear).
      descriptor: its behaviour cell when it was made (the archive uses the current one).
      diff: the LLM's edit text (diff mutations).
      error: why it failed, one line.
      call_key: the LLM call that wrote it.
      info: anything else (quick scores, fitness at birth).
      author: who wrote the source (``csro.authorship``: ``model``, ``grammar`` for a rewrite
        decoded under the grammar and not repaired, the seeds' author; a migrant keeps its
        original's); None for a program stored before authorship was recorded.
    """

    id: str
    iteration: int
    generation: int
    island: int
    source: str | None
    parent: str | None = None
    inspirations: tuple[str, ...] = ()
    mutation: str = "seed"
    status: str = "ok"
    stage: int = 0
    scores: dict = dataclasses.field(default_factory=dict)
    descriptor: tuple[int, ...] = ()
    diff: str | None = None
    error: str | None = None
    call_key: str | None = None
    info: dict = dataclasses.field(default_factory=dict)
    author: str | None = None

    @property
    def evaluated(self) -> bool:
        return self.stage >= FULL and self.source is not None


class ProgramDatabase:
    """All programs of a search, their current fitness, and the islands' archives."""

    def __init__(self, islands: int, fitness: FitnessFn, descriptor: DescriptorFn):
        if islands < 1:
            raise ValueError("islands must be >= 1")
        self.islands = islands
        self.programs: dict[str, Program] = {}
        self._fitness_fn = fitness
        self._descriptor_fn = descriptor
        self._fitness: dict[str, float | None] = {}
        self._cell: dict[str, tuple] = {}

    def _score(self, program: Program) -> None:
        evaluated = program.evaluated
        self._fitness[program.id] = self._fitness_fn(program.scores) if evaluated else None
        self._cell[program.id] = self._descriptor_fn(program) if evaluated else ()

    # -- contents ----------------------------------------------------------------------------
    def add(self, program: Program) -> None:
        if program.id in self.programs:
            raise ValueError(f"program {program.id} is already in the database")
        if not 0 <= program.island < self.islands:
            raise ValueError(f"program {program.id}: island {program.island} out of range")
        self.programs[program.id] = program
        self._score(program)

    def update_scores(self, program_id: str, scores: dict) -> None:
        """Extend a program's scores (cells against new opponents) and recompute its fitness."""
        program = self.programs[program_id]
        program.scores.update(scores)
        self._score(program)

    def fitness(self, program_id: str) -> float | None:
        return self._fitness[program_id]

    def cell(self, program_id: str) -> tuple:
        return self._cell[program_id]

    def rescore(self, fitness: FitnessFn, descriptor: DescriptorFn | None = None) -> int:
        """Adopt a new target: every fitness (and cell) recomputed from the stored scores,
        nothing simulated; returns how many programs were re-scored."""
        self._fitness_fn = fitness
        self._descriptor_fn = descriptor or self._descriptor_fn
        for program in self.programs.values():
            self._score(program)
        return len(self.programs)

    def missing(self, needed: Iterable[str], programs: Iterable[Program]) -> dict[str, list[str]]:
        """For each of ``programs``, the components of ``needed`` its scores lack."""
        needed = list(needed)
        out = {}
        for p in programs:
            lack = [n for n in needed if n not in p.scores]
            if lack:
                out[p.id] = lack
        return out

    # -- archives ----------------------------------------------------------------------------
    def archive(self, island: int) -> dict[tuple[int, ...], Program]:
        """Cell -> the fittest fully evaluated program of ``island`` in it (first on ties)."""
        cells: dict[tuple[int, ...], Program] = {}
        for p in self.programs.values():
            f = self._fitness[p.id]
            if p.island != island or f is None:
                continue
            cell = self._cell[p.id]
            best = cells.get(cell)
            if best is None or f > self._fitness[best.id]:
                cells[cell] = p
        return cells

    def elites(self, island: int | None = None) -> list[Program]:
        """The archive's programs (of one island, or all), fittest first."""
        islands = range(self.islands) if island is None else [island]
        elites = [p for i in islands for p in self.archive(i).values()]
        return sorted(elites, key=lambda p: -self._fitness[p.id])

    def best(self, exclude: Callable[[Program], bool] = lambda p: False) -> Program | None:
        """The fittest fully evaluated program over all islands not excluded."""
        scored = [p for p in self.programs.values() if self._fitness[p.id] is not None and not exclude(p)]
        return max(scored, key=lambda p: self._fitness[p.id], default=None)

    # -- sampling -----------------------------------------------------------------------------
    def sample_parent(self, island: int, rng: random.Random, exploit: float, tournament: int = 2) -> Program | None:
        """A parent from ``island``'s archive: a tournament (prob. ``exploit``) or a uniform cell."""
        elites = self.elites(island)
        if not elites:
            return None
        if rng.random() < exploit:
            entrants = [rng.choice(elites) for _ in range(max(1, tournament))]
            return max(entrants, key=lambda p: self._fitness[p.id])
        return rng.choice(elites)

    def sample_inspirations(self, island: int, parent: Program | None, rng: random.Random, n: int) -> list[Program]:
        """Up to ``n`` programs to show beside the parent: the island's best, then random elites."""
        if n <= 0:
            return []
        pool = [p for p in self.elites(island) if parent is None or p.id != parent.id]
        chosen = pool[:1]
        rest = pool[1:] + [p for p in self.elites() if p.island != island]
        rng.shuffle(rest)
        for p in rest:
            if len(chosen) >= n:
                break
            if all(p.source != c.source for c in chosen) and (parent is None or p.source != parent.source):
                chosen.append(p)
        return chosen[:n]

    def migrants(self, iteration: int, generation: int) -> list[Program]:
        """Copies of each island's best elite for the next island of the ring (not yet added)."""
        if self.islands < 2:
            return []
        out = []
        for island in range(self.islands):
            elites = self.elites(island)
            if not elites:
                continue
            best = elites[0]
            target = (island + 1) % self.islands
            if any(p.island == target and p.source == best.source for p in self.programs.values()):
                continue
            out.append(dataclasses.replace(
                best, id=f"m{iteration}.{generation}.{island}-{target}", iteration=iteration,
                generation=generation, island=target, parent=best.id, inspirations=(),
                mutation="migrant", status="migrant", scores=dict(best.scores), diff=None,
                call_key=None, info={}))
        return out

    def by_status(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for p in self.programs.values():
            counts[p.status] = counts.get(p.status, 0) + 1
        return counts


def length_bin(source: str | None, edges: Sequence[int]) -> int:
    """The code-length behaviour feature: the index of the first edge above the line count."""
    lines = len([ln for ln in (source or "").splitlines() if ln.strip()])
    return next((i for i, e in enumerate(edges) if lines < e), len(edges))
