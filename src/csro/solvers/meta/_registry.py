"""The meta-solver registry and its resolver, plus the CSRO loop's symmetric helper."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from csro.errors import ConfigError
from csro.solvers.meta._alpharank import AlphaRankSolver
from csro.solvers.meta._base import MetaSolver, clean_distribution
from csro.solvers.meta._correlated import CCESolver, CESolver
from csro.solvers.meta._dynamics import PRDSolver, RMSolver
from csro.solvers.meta._gambit import GambitNashSolver
from csro.solvers.meta._nash import NashSolver
from csro.solvers.meta._shor import PMSolver, ShorEvalSolver, ShorTrainSolver
from csro.solvers.meta._uniform import UniformSolver

#: Every meta-solver by name. Each entry is a dataclass whose fields are its options and
#: whose ``solve(payoffs)`` returns one sigma per player; the joint ones (``ce``, ``cce``,
#: ``JointMetaSolver``) also give their joint sigma with ``solve_joint(payoffs)``.
META_SOLVERS: dict[str, type[MetaSolver]] = {
    cls.name: cls
    for cls in (UniformSolver, NashSolver, PRDSolver, RMSolver, AlphaRankSolver,
                ShorTrainSolver, ShorEvalSolver, PMSolver, CESolver, CCESolver, GambitNashSolver)
}


def meta_solver_options(name: str) -> list[str]:
    """The option names ``get_meta_solver(name, ...)`` accepts."""
    cls = _lookup(name)
    return [f.name for f in dataclasses.fields(cls) if f.init]


def _lookup(name: str) -> type[MetaSolver]:
    try:
        return META_SOLVERS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown meta-solver {name!r}; valid: {', '.join(sorted(META_SOLVERS))}"
        ) from None


def get_meta_solver(name: str, **options: Any) -> MetaSolver:
    """A fresh meta-solver ``name`` built with ``options`` (see each class's docstring).

    Unknown names and options, and invalid option values, raise ``ConfigError``. Always a
    new instance, so stateful solvers (``shor``) start their schedule at k = 0.
    """
    cls = _lookup(name)
    valid = meta_solver_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(
            f"meta-solver {name!r} has no option(s) {', '.join(unknown)}; "
            f"valid: {', '.join(valid) if valid else '(none)'}"
        )
    try:
        return cls(**options)
    except TypeError as exc:
        raise ConfigError(f"meta-solver {name!r}: bad option value ({exc})") from None


def symmetric_sigma(matrix: np.ndarray, solver: str | MetaSolver = "nash") -> np.ndarray:
    """The single sigma of a symmetric two-player zero-sum meta-game (the CSRO loop's case).

    ``matrix[i, j]`` is the payoff of policy i against policy j. The game is first made
    exactly antisymmetric, ``S = (U - U^T) / 2`` — exact for a symmetric zero-sum or
    constant-sum game, and the nearest antisymmetric matrix (least squares) for a noisy
    estimate — and the zero-sum game ``S`` is solved with ``solver``. In an antisymmetric game
    both players face the same problem; we return the mean of the two players' sigmas (for
    Nash the equilibrium set of each player is convex and the same, so the mean is still an
    equilibrium strategy; simultaneous dynamics give identical sigmas anyway).
    """
    u = np.asarray(matrix, dtype=np.float64)
    if u.ndim != 2 or u.shape[0] != u.shape[1]:
        raise ValueError(f"symmetric_sigma needs a square matrix, got shape {u.shape}")
    s = 0.5 * (u - u.T)
    meta = get_meta_solver(solver) if isinstance(solver, str) else solver
    x, y = meta.solve([s, -s])
    return clean_distribution(0.5 * (x + y))
