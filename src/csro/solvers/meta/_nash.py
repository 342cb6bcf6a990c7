"""Nash meta-solver: exact for two players, Gambit's logit-QRE limit beyond.

Which method runs depends on the meta-game:

1. **Two players, constant-sum** (the PSRO and CSRO case): each player's maximin strategy by
   linear programming with HiGHS (``scipy.optimize.linprog(method="highs")``), one LP per
   player. Row player: maximise v s.t. ``(A^T x)_j >= v`` for every column j, ``x`` in the
   simplex. Column player: minimise w s.t. ``(A y)_i <= w``. In a constant-sum game the pair
   of maximin strategies is a Nash equilibrium (von Neumann). When the equilibrium is not
   unique the LP returns one vertex of the equilibrium set.
2. **Two players, general-sum**: the Lemke–Howson complementary pivoting algorithm
   (Lemke & Howson 1964; the tableau form of von Stengel, "Computing equilibria for
   two-person games", 2002), with lexicographic minimum-ratio tie-breaking so degenerate
   games do not cycle. It finds *one* equilibrium (which one depends on the dropped label;
   label 0 is tried first). The result is checked; if no label yields an equilibrium within
   tolerance (numerical trouble), the solver falls back to item 3 and logs a warning.
3. **Three or more players**: Gambit's logit-QRE limit (``GambitNashSolver``, pygambit),
   an equilibrium to about 1e-7 relative NashConv. Only when pygambit is missing or its
   answer fails its check do we fall back to an **approximation** (with a warning): projected
   replicator dynamics (``PRDSolver``, the spec's dt and gamma) and regret matching
   (``RMSolver``), each for ``approx_steps`` steps, returning whichever average profile has
   the lower meta NashConv; neither average is guaranteed to be a Nash equilibrium of an
   n-player game (RM's converges to the coarse-correlated set).

OpenSpiel's own ``psro_v2`` "nash" is the two-player zero-sum LP only; items 2–3 are our
extension so the same name works on every meta-game PSRO produces.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
from scipy.optimize import linprog

from csro.errors import ConfigError
from csro.solvers.meta._base import MetaSolver, is_constant_sum, meta_nash_conv
from csro.solvers.meta._dynamics import PRDSolver, RMSolver
from csro.solvers.meta._gambit import GambitNashSolver

logger = logging.getLogger(__name__)


def zero_sum_maximin(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Maximin strategies ``(x, y)`` and the value of the zero-sum game ``A`` (row maximises).

    Solved with two HiGHS linear programs. Raises ``RuntimeError`` if HiGHS fails (it does
    not on finite input: both LPs are always feasible and bounded).
    """
    a = np.asarray(a, dtype=np.float64)
    m, n = a.shape
    # Row player: variables (x_1..x_m, v); minimise -v; v - (A^T x)_j <= 0; sum x = 1.
    res_x = linprog(
        c=np.r_[np.zeros(m), -1.0],
        A_ub=np.c_[-a.T, np.ones(n)],
        b_ub=np.zeros(n),
        A_eq=np.r_[np.ones(m), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0.0, None)] * m + [(None, None)],
        method="highs",
    )
    # Column player: variables (y_1..y_n, w); minimise w; (A y)_i - w <= 0; sum y = 1.
    res_y = linprog(
        c=np.r_[np.zeros(n), 1.0],
        A_ub=np.c_[a, -np.ones(m)],
        b_ub=np.zeros(m),
        A_eq=np.r_[np.ones(n), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0.0, None)] * n + [(None, None)],
        method="highs",
    )
    if res_x.status != 0 or res_y.status != 0:
        raise RuntimeError(f"HiGHS failed: {res_x.message} / {res_y.message}")
    return res_x.x[:m], res_y.x[:n], float(-res_x.fun)


def _pivot(tab: np.ndarray, basis: list[int], enter: int, slack_cols: slice) -> int:
    """Pivot column ``enter`` into the basis of tableau ``tab`` (rows ``[M | I | rhs]``).

    The leaving row is chosen by the lexicographic minimum-ratio rule on (rhs, columns of
    the initial identity), which prevents cycling. Returns the column that left.
    """
    col = tab[:, enter]
    rows = np.flatnonzero(col > 1e-12)
    if len(rows) == 0:  # cannot happen for positive payoff matrices (bounded polytopes)
        raise RuntimeError("Lemke-Howson: unbounded ray")
    keys = np.c_[tab[rows, -1], tab[rows, slack_cols]] / col[rows, None]
    best = 0
    for r in range(1, len(rows)):
        diff = keys[r] - keys[best]
        nz = np.flatnonzero(np.abs(diff) > 1e-12)
        if len(nz) and diff[nz[0]] < 0:
            best = r
    row = rows[best]
    tab[row] /= tab[row, enter]
    others = np.arange(len(tab)) != row
    tab[others] -= np.outer(tab[others, enter], tab[row])
    left = basis[row]
    basis[row] = enter
    return left


def lemke_howson(a: np.ndarray, b: np.ndarray, label: int = 0,
                 max_pivots: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """One Nash equilibrium ``(x, y)`` of the bimatrix game (row payoff A, column payoff B).

    Labels 0..m-1 are the row player's strategies, m..m+n-1 the column player's; ``label``
    is the one dropped at the artificial equilibrium (0, 0).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    m, n = a.shape
    a = a - a.min() + 1.0  # positive payoffs: the best-response polytopes are bounded
    b = b - b.min() + 1.0
    # P tableau (n rows): B^T x + s = 1, columns x_0..x_{m-1}, s_0..s_{n-1}, rhs.
    # Labels: x_i -> i, s_j -> m + j.
    tab_p = np.c_[b.T, np.eye(n), np.ones(n)]
    basis_p = list(range(m, m + n))
    # Q tableau (m rows): A y + r = 1, columns y_0..y_{n-1}, r_0..r_{m-1}, rhs.
    # Labels: y_j -> m + j, r_i -> i.
    tab_q = np.c_[a, np.eye(m), np.ones(m)]
    basis_q = list(range(n, n + m))

    def label_p(c: int) -> int:  # column of P -> label
        return c  # x_i is column i (label i); s_j is column m + j (label m + j)

    def label_q(c: int) -> int:  # column of Q -> label
        return m + c if c < n else c - n

    def col_p(lab: int) -> int:
        return lab

    def col_q(lab: int) -> int:
        return lab - m if lab >= m else n + lab

    # Entering the dropped label: x_label in P, or y_(label-m) in Q.
    in_p = label < m
    enter = col_p(label) if in_p else col_q(label)
    for _ in range(max_pivots):
        if in_p:
            left_lab = label_p(_pivot(tab_p, basis_p, enter, slice(m, m + n)))
        else:
            left_lab = label_q(_pivot(tab_q, basis_q, enter, slice(n, n + m)))
        if left_lab == label:
            break
        # The complement of the leaving label enters in the other tableau.
        in_p = not in_p
        enter = col_p(left_lab) if in_p else col_q(left_lab)
    else:
        raise RuntimeError("Lemke-Howson: pivot limit reached")
    x = np.zeros(m)
    for row, c in enumerate(basis_p):
        if c < m:
            x[c] = tab_p[row, -1]
    y = np.zeros(n)
    for row, c in enumerate(basis_q):
        if c < n:
            y[c] = tab_q[row, -1]
    return x / x.sum(), y / y.sum()


@dataclasses.dataclass(frozen=True)
class NashSolver(MetaSolver):
    """Nash equilibrium: LP (2p constant-sum), Lemke–Howson (2p general-sum), Gambit (n > 2).

    Options:
        zero_sum_rtol: the game counts as constant-sum when the players' payoffs sum to the
            same value in every cell up to ``zero_sum_rtol * max|payoff|`` (default 1e-9).
        nash_conv_tol: Lemke–Howson's answer is accepted when its meta NashConv is at most
            this times max|payoff| (default 1e-7); otherwise the next label is tried.
        approx_steps: steps of PRD and of RM when the exact methods fail (the rare
            Lemke–Howson failure, pygambit missing or failing); default 100000.
    """

    name = "nash"
    zero_sum_rtol: float = 1e-9
    nash_conv_tol: float = 1e-7
    approx_steps: int = 100_000

    def __post_init__(self) -> None:
        if not self.zero_sum_rtol >= 0:
            raise ConfigError(f"nash: zero_sum_rtol must be >= 0, got {self.zero_sum_rtol}")
        if not self.nash_conv_tol > 0:
            raise ConfigError(f"nash: nash_conv_tol must be > 0, got {self.nash_conv_tol}")
        if self.approx_steps < 1:
            raise ConfigError(f"nash: approx_steps must be >= 1, got {self.approx_steps}")

    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        if len(tensors) == 1:
            return [np.eye(len(tensors[0]))[int(np.argmax(tensors[0]))]]
        if len(tensors) == 2:
            if is_constant_sum(tensors, self.zero_sum_rtol):
                x, y, _ = zero_sum_maximin(tensors[0])
                return [x, y]
            a, b = tensors
            scale = max(1.0, float(np.max(np.abs(a))), float(np.max(np.abs(b))))
            for label in range(sum(a.shape)):
                try:
                    x, y = lemke_howson(a, b, label)
                except RuntimeError:
                    continue
                if meta_nash_conv(tensors, [x, y]) <= self.nash_conv_tol * scale:
                    return [x, y]
            logger.warning("nash: Lemke-Howson failed on a %s game; approximating", a.shape)
        else:
            try:
                return GambitNashSolver().solve(tensors)
            except (ConfigError, RuntimeError) as exc:
                logger.warning("nash: pygambit failed on a %s game (%s); approximating", tensors[0].shape, exc)
        candidates = [
            PRDSolver(steps=self.approx_steps).solve(tensors),
            RMSolver(iterations=self.approx_steps).solve(tensors),
        ]
        return min(candidates, key=lambda s: meta_nash_conv(tensors, s))
