"""Correlated (CE) and coarse-correlated (CCE) equilibrium meta-solvers, by linear programming.

The CE and CCE of a finite game form polytopes of joint distributions over pure profiles
(Aumann 1974; Hannan 1957 / Moulin & Vial 1978 for the coarse version), so every selection
below is one or two linear programs solved with HiGHS (``scipy.optimize.linprog(method=
"highs")``), as JPSRO does for its meta-solvers (Marris et al., ICML 2021, arXiv 2106.09435).
Variables: the joint sigma, one entry per profile. Constraints, per player i
(``u_i`` its payoff tensor, ``a_{-i}`` the others' profile):

- CE: for every recommended ``a`` and deviation ``a' != a``:
  ``sum_{a_{-i}} sigma(a, a_{-i}) (u_i(a', a_{-i}) - u_i(a, a_{-i})) <= 0``.
- CCE: for every deviation ``a'``: ``sum_a sigma(a) (u_i(a', a_{-i}) - u_i(a)) <= 0``.

Selections (option ``selection``), both documented choices of ours:

- ``welfare`` (default): maximise the expected sum of all players' payoffs (JPSRO's MW(C)CE).
  When several equilibria have the maximal welfare, HiGHS returns one vertex of that face.
- ``maxmin``: a *most mixed* equilibrium, our LP stand-in for the maximum-entropy selection
  (Ortiz, Schapire, Sherman 2007; JPSRO's ME(C)CE / MG(C)CE need a convex solver that SciPy
  does not offer). The maximum-entropy CE lies in the relative interior of the polytope, i.e.
  it gives positive probability to every profile that *some* CE plays; so do we, in two LPs:
  (1) the largest support: over the cone ``{x >= 0 : constraints}`` (the constraints are
  homogeneous), maximise ``sum_a y_a`` with ``0 <= y_a <= min(1, x_a)``; every profile some
  equilibrium plays reaches ``y_a = 1`` (scale that equilibrium up) and no other can leave 0;
  (2) on that support, maximise the smallest probability ``t`` (``sigma_a >= t``). Where the
  maximiser is not unique HiGHS returns one vertex of the optimal face (on chicken and on
  Shapley's game it is unique, the uniform joint; tests/solvers/meta/test_correlated.py).

HiGHS runs with primal and dual feasibility tolerance ``feasibility_tol`` (default 1e-10, in
payoff units), and the answer is checked afterwards with the gap functions of ``_joint``,
computed from the payoff tensors (not from the LP rows): a joint whose gap exceeds
``check_tol * max(1, max|payoff|)`` raises ``RuntimeError``. Measured: gaps of 1e-12 or less
on random games with payoffs scaled from 1e-3 to 1e3.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from csro.errors import ConfigError
from csro.solvers.meta._base import JointMetaSolver
from csro.solvers.meta._joint import cce_gap, ce_gap

SELECTIONS = ("welfare", "maxmin")


def deviation_constraints(tensors: list[np.ndarray], coarse: bool) -> sparse.csr_matrix:
    """The rows ``A`` of ``A sigma <= 0`` (CE, or CCE when ``coarse``) over the flat joint sigma.

    The joint sigma is flattened row-major over the meta-game's shape (the last player varies
    fastest), as ``np.ravel`` does.
    """
    shape = tensors[0].shape
    total = int(np.prod(shape))
    flat = np.arange(total).reshape(shape)
    rows, cols, data = [], [], []
    row = 0
    for i, tensor in enumerate(tensors):
        n = shape[i]
        idx = np.moveaxis(flat, i, 0).reshape(n, -1)  # idx[a, r]: the profile (a, r)
        u = np.moveaxis(tensor, i, 0).reshape(n, -1)  # u[a, r]: player i's payoff there
        for dev in range(n):
            gain = u[dev][None, :] - u  # gain[a, r] of switching a -> dev against r
            if coarse:
                rows.append(np.full(total, row))
                cols.append(idx.ravel())
                data.append(gain.ravel())
                row += 1
                continue
            for rec in range(n):
                if rec == dev:
                    continue
                rows.append(np.full(idx.shape[1], row))
                cols.append(idx[rec])
                data.append(gain[rec])
                row += 1
    return sparse.csr_matrix((np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(row, total))


def _highs(c, a_ub, b_ub, a_eq, b_eq, bounds, tol: float):
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs",
                  options={"primal_feasibility_tolerance": tol, "dual_feasibility_tolerance": tol})
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the equilibrium LP: {res.message}")
    return res.x


def largest_support(dev: sparse.csr_matrix, tol: float) -> np.ndarray:
    """Boolean mask of the profiles that some equilibrium of ``dev x <= 0`` plays (LP (1))."""
    m, total = dev.shape
    # variables [x (total), y (total)]; maximise sum y; dev x <= 0; y - x <= 0
    a_ub = sparse.vstack([sparse.hstack([dev, sparse.csr_matrix((m, total))]),
                          sparse.hstack([-sparse.identity(total), sparse.identity(total)])]).tocsr()
    z = _highs(np.r_[np.zeros(total), -np.ones(total)], a_ub, np.zeros(m + total), None, None,
               [(0.0, None)] * total + [(0.0, 1.0)] * total, tol)
    return z[total:] > 0.5


@dataclasses.dataclass(frozen=True)
class _CorrelatedSolver(JointMetaSolver):
    """Shared LP machinery of the CE and CCE solvers (see the module docstring)."""

    coarse = False
    selection: str = "welfare"
    feasibility_tol: float = 1e-10
    check_tol: float = 1e-8

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise ConfigError(f"{self.name}: selection must be one of {', '.join(SELECTIONS)}, "
                              f"got {self.selection!r}")
        if not 0 < self.feasibility_tol < 1e-3:
            raise ConfigError(f"{self.name}: feasibility_tol must be in (0, 1e-3), got {self.feasibility_tol}")
        if not self.check_tol > 0:
            raise ConfigError(f"{self.name}: check_tol must be > 0, got {self.check_tol}")

    def _solve_joint(self, tensors: list[np.ndarray]) -> np.ndarray:
        shape = tensors[0].shape
        total = int(np.prod(shape))
        dev = deviation_constraints(tensors, self.coarse)
        m = dev.shape[0]
        if self.selection == "welfare":
            welfare = np.sum(tensors, axis=0).ravel()
            sigma = _highs(-welfare, dev, np.zeros(m), np.ones((1, total)), [1.0],
                           [(0.0, None)] * total, self.feasibility_tol)
        else:
            support = largest_support(dev, self.feasibility_tol)
            k = int(support.sum())
            # variables [sigma (total), t]; maximise t; dev sigma <= 0; t - sigma_a <= 0 on the support
            floor = sparse.hstack([-sparse.identity(total, format="csr")[support], np.ones((k, 1))])
            a_ub = sparse.vstack([sparse.hstack([dev, sparse.csr_matrix((m, 1))]), floor]).tocsr()
            bounds = [(0.0, None if s else 0.0) for s in support] + [(0.0, 1.0)]
            z = _highs(np.r_[np.zeros(total), -1.0], a_ub, np.zeros(m + k),
                       np.r_[np.ones(total), 0.0][None, :], [1.0], bounds, self.feasibility_tol)
            sigma = z[:total]
        joint = np.maximum(sigma, 0.0)
        joint = (joint / joint.sum()).reshape(shape)
        gap = (cce_gap if self.coarse else ce_gap)(tensors, joint)
        scale = max(1.0, max(float(np.max(np.abs(t))) for t in tensors))
        if gap > self.check_tol * scale:
            raise RuntimeError(f"{self.name}: HiGHS answer has gap {gap:.3g} on a {shape} meta-game")
        return joint


@dataclasses.dataclass(frozen=True)
class CESolver(_CorrelatedSolver):
    """Correlated equilibrium by LP. Options: ``selection`` (welfare | maxmin),
    ``feasibility_tol`` (HiGHS, 1e-10), ``check_tol`` (1e-8 times max|payoff|)."""

    name = "ce"
    coarse = False


@dataclasses.dataclass(frozen=True)
class CCESolver(_CorrelatedSolver):
    """Coarse-correlated equilibrium by LP. Options as ``CESolver``."""

    name = "cce"
    coarse = True
