"""One CFR run: a validated config in, final NashConv and a checkpoint curve out."""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from csro.errors import ConfigError
from csro.solvers.cfr._engine import CFRSolver
from csro.solvers.cfr._registry import ALGORITHMS, make_variant
from csro.solvers.cfr._tree import GameTree, load_tree

__all__ = ["SolveConfig", "SolveResult", "CurvePoint", "solve", "log_checkpoints"]


def log_checkpoints(iterations: int, count: int = 24) -> tuple[int, ...]:
    """About ``count`` log-spaced iteration numbers in ``[1, iterations]``, always ending at
    ``iterations``."""
    if iterations < 1:
        return ()
    points = np.unique(np.round(np.logspace(0, np.log10(iterations), count)).astype(int))
    points = points[(points >= 1) & (points <= iterations)]
    return tuple(sorted(set(points.tolist()) | {iterations}))


@dataclasses.dataclass(frozen=True)
class SolveConfig:
    """What to solve.

    Attributes:
      game: an OpenSpiel game string (simultaneous games are made turn-based).
      algo: a name in ``csro.solvers.cfr.ALGORITHMS``.
      iterations: CFR iterations K (>= 1); also the horizon given to the variant's factory.
      checkpoints: iterations after which NashConv of the average policy is recorded; the
        final iteration is always recorded.
    """

    game: str
    algo: str
    iterations: int
    checkpoints: tuple[int, ...] = ()

    def __post_init__(self):
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, int):
            raise ConfigError(f"iterations must be an integer, got {self.iterations!r}")
        if self.iterations < 1:
            raise ConfigError(f"iterations must be >= 1, got {self.iterations}")
        if self.algo not in ALGORITHMS:
            raise ConfigError(
                f"unknown CFR algorithm {self.algo!r}; valid: {', '.join(ALGORITHMS)}"
            )
        bad = [c for c in self.checkpoints if not 1 <= c <= self.iterations]
        if bad:
            raise ConfigError(
                f"checkpoints must lie in 1..{self.iterations}, got {sorted(bad)}"
            )

    @property
    def schedule(self) -> tuple[int, ...]:
        """Sorted checkpoint iterations, the final one included."""
        return tuple(sorted(set(self.checkpoints) | {self.iterations}))


@dataclasses.dataclass(frozen=True)
class CurvePoint:
    """NashConv of the average policy after ``iteration`` iterations."""

    iteration: int
    nash_conv: float
    exploitability: float
    seconds: float


@dataclasses.dataclass(frozen=True)
class SolveResult:
    """A finished run. ``seconds`` is the wall time of the whole run: tree (if not cached),
    iterations and NashConv evaluations."""

    game: str
    algo: str
    iterations: int
    nash_conv: float
    exploitability: float
    seconds: float
    curve: tuple[CurvePoint, ...]

    def to_json(self) -> dict:
        return {
            "game": self.game,
            "algo": self.algo,
            "iterations": self.iterations,
            "nash_conv": self.nash_conv,
            "exploitability": self.exploitability,
            "seconds": round(self.seconds, 4),
        }


def solve(
    config: SolveConfig,
    progress: Callable[[int, int], None] | None = None,
    tree: GameTree | None = None,
) -> SolveResult:
    """Run ``config.algo`` on ``config.game`` for ``config.iterations`` iterations.

    ``progress(done, total)`` is called after every iteration. ``tree`` is the game's tree
    if the caller already has it (else the cached one is used). Raises GameError for a bad
    game string.
    """
    start = time.perf_counter()
    if tree is None:
        tree = load_tree(config.game)
    solver = CFRSolver(tree, make_variant(config.algo, config.iterations))
    curve = []
    for target in config.schedule:
        while solver.iteration < target:
            solver.step()
            if progress is not None:
                progress(solver.iteration, config.iterations)
        nc = solver.nash_conv()
        curve.append(
            CurvePoint(target, nc, nc / tree.num_players, time.perf_counter() - start)
        )
    last = curve[-1]
    return SolveResult(
        game=config.game,
        algo=config.algo,
        iterations=config.iterations,
        nash_conv=last.nash_conv,
        exploitability=last.exploitability,
        seconds=time.perf_counter() - start,
        curve=tuple(curve),
    )
