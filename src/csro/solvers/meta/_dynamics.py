"""Learning-dynamics meta-solvers: projected replicator dynamics and regret matching.

Both run all players *simultaneously* from the uniform profile for a fixed number of steps
and return each player's **average** strategy over the steps (the iterates after each
step, uniformly weighted).

- **PRD** (Lanctot et al. 2017, arXiv 1711.00832, the meta-solver of PSRO's original paper):
  ``x_p <- Proj_gamma(x_p + dt * x_p * (u_p - x_p . u_p))`` where ``u_p`` is the payoff of
  each of p's pure strategies against the others' current strategies and ``Proj_gamma`` is
  the Euclidean projection onto ``{x : sum x = 1, x_i >= gamma}``. Spec defaults dt = 1e-3,
  gamma = 1e-6, 1e5 steps (as OpenSpiel's ``projected_replicator_dynamics``). The replicator
  step preserves the sum, so the projection only acts when an entry falls below gamma.
- **RM** (Hart & Mas-Colell 2000): cumulative regrets ``R_p += u_p - x_p . u_p``,
  ``x_p = R_p^+ / sum R_p^+`` (uniform when no regret is positive). In two-player
  constant-sum games the average converges to a Nash equilibrium at rate O(1/sqrt(T)); in
  general it converges to the coarse-correlated set and the marginals returned here are only
  an approximation. Unlike OpenSpiel's ``regret_matching`` we mix in no gamma-uniform
  exploration and start from zero regrets (plain RM).

Implementation: the profile is one stacked vector; for two players one block matrix product
gives every player's payoff vector per step, so a step costs a handful of numpy calls
(measured on one shared core, 1e5 steps: PRD 1.1 s on RPS, 4.0 s on a 30×30 Leduc PSRO
meta-game where the gamma floor is active on most steps, 3.4 s on a 10×10×10 three-player
Kuhn meta-game; RM 1.4 s, 1.8 s and 3.8 s on the same).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from csro.errors import ConfigError
from csro.solvers.meta._base import MetaSolver


class _StackedGame:
    """All players' payoff vectors for a stacked profile ``z = [x_0, x_1, ...]``."""

    def __init__(self, tensors: list[np.ndarray]):
        self.tensors = tensors
        self.shape = tensors[0].shape
        self.offsets = np.r_[0, np.cumsum(self.shape)]
        self.size = int(self.offsets[-1])
        # seg[p, k] = 1 when entry k of the stacked vector belongs to player p.
        seg = np.zeros((len(self.shape), self.size))
        for p in range(len(self.shape)):
            seg[p, self.offsets[p]:self.offsets[p + 1]] = 1.0
        self.seg = seg
        # same[k, l] = 1 when entries k and l belong to the same player: one matrix-vector
        # product gives per-player sums broadcast back (faster than two segment ops).
        self.same = seg.T @ seg
        self.uniform = seg.T @ (1.0 / np.asarray(self.shape, dtype=np.float64))
        if len(tensors) == 2:
            a0, a1 = tensors
            n0, n1 = self.shape
            block = np.zeros((self.size, self.size))
            block[:n0, n0:] = a0
            block[n0:, :n0] = a1.T
            self._block: np.ndarray | None = block
        else:
            self._block = None
            # each player's tensor with its own axis first, contiguous for fast contraction
            self._moved = [np.ascontiguousarray(np.moveaxis(t, p, 0)) for p, t in enumerate(tensors)]

    def split(self, z: np.ndarray) -> list[np.ndarray]:
        return [z[self.offsets[p]:self.offsets[p + 1]] for p in range(len(self.shape))]

    def values(self, z: np.ndarray) -> np.ndarray:
        if self._block is not None:
            return self._block @ z
        if len(self.shape) == 1:
            return self.tensors[0].copy()
        sig = self.split(z)
        out = []
        for p, t in enumerate(self._moved):
            for q in range(len(sig) - 1, -1, -1):
                if q != p:
                    t = t @ sig[q]
            out.append(t)
        return np.concatenate(out)

    def per_player(self, v: np.ndarray) -> np.ndarray:
        """Per-player sums of ``v``, broadcast back to the stacked layout."""
        return self.same @ v


def project_capped_simplex(v: np.ndarray, gamma: float) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{x : sum x = 1, x_i >= gamma}``."""
    n = len(v)
    w = v - gamma
    total = 1.0 - n * gamma
    u = np.sort(w)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, n + 1)
    rho = np.flatnonzero(u - css / k > 0)[-1]
    theta = css[rho] / (rho + 1)
    return np.maximum(w - theta, 0.0) + gamma


@dataclasses.dataclass(frozen=True)
class PRDSolver(MetaSolver):
    """Projected replicator dynamics, averaged (Lanctot et al. 2017, arXiv 1711.00832).

    Options: ``dt`` step size (1e-3), ``gamma`` minimum probability (1e-6), ``steps``
    (100000) — the spec's parameters.
    """

    name = "prd"
    dt: float = 1e-3
    gamma: float = 1e-6
    steps: int = 100_000

    def __post_init__(self) -> None:
        if not self.dt > 0:
            raise ConfigError(f"prd: dt must be > 0, got {self.dt}")
        if not 0 <= self.gamma < 1:
            raise ConfigError(f"prd: gamma must be in [0, 1), got {self.gamma}")
        if self.steps < 1:
            raise ConfigError(f"prd: steps must be >= 1, got {self.steps}")

    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        g = _StackedGame(tensors)
        if max(g.shape) * self.gamma >= 1.0:
            raise ConfigError(f"prd: gamma {self.gamma} too large for {max(g.shape)} strategies")
        z = g.uniform.copy()
        acc = np.zeros_like(z)
        dt, gamma = self.dt, self.gamma
        for _ in range(self.steps):
            zu = z * g.values(z)
            z = z + dt * (zu - z * g.per_player(zu))
            if z.min() < gamma:
                z = self._project(g, z)
            acc += z
        return g.split(acc / self.steps)

    def _project(self, g: _StackedGame, z: np.ndarray) -> np.ndarray:
        """Each player's part of ``z`` projected onto its gamma-capped simplex.

        The projection is ``max(z - theta_p, gamma)`` with theta_p >= 0 (the replicator step
        keeps each sum at 1, so clamping only adds mass). Vectorised fixed-point search for
        the clamped set (Michelot 1986): start with the entries below gamma, shift the rest
        by the theta that restores the sum, add any entry the shift pushes below gamma,
        repeat; the set only grows, so a few rounds suffice. Sort per player as a fallback.
        """
        gamma = self.gamma
        low = z < gamma
        for _ in range(8):
            n_free = g.per_player(~low)
            if n_free.min() <= 0:
                break
            theta = (g.per_player(np.where(low, gamma, z)) - 1.0) / n_free
            shifted = z - theta
            newly = ~low & (shifted < gamma)
            if not newly.any():
                return np.where(low, gamma, shifted)
            low |= newly
        return np.concatenate([project_capped_simplex(x, gamma) for x in g.split(z)])


@dataclasses.dataclass(frozen=True)
class RMSolver(MetaSolver):
    """Regret matching, simultaneous updates, average strategy (Hart & Mas-Colell 2000).

    Option: ``iterations`` (100000, as OpenSpiel's ``regret_matching``).
    """

    name = "rm"
    iterations: int = 100_000

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise ConfigError(f"rm: iterations must be >= 1, got {self.iterations}")

    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        g = _StackedGame(tensors)
        z = g.uniform.copy()
        regret = np.zeros_like(z)
        acc = np.zeros_like(z)
        for _ in range(self.iterations):
            u = g.values(z)
            regret += u - g.per_player(z * u)
            pos = np.maximum(regret, 0.0)
            tot = g.per_player(pos)
            z = np.where(tot > 0, pos / np.where(tot > 0, tot, 1.0), g.uniform)
            acc += z
        return g.split(acc / self.iterations)
