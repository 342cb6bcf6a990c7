"""The empirical game of a CSRO run: U over the population, its uncertainty, sigma's stability.

PSRO (and CSRO, Hennes et al. arXiv 2603.10098, Algorithm 1) solves the meta-game U whose
cells are *estimated* by simulation. With few matches per cell the estimate is noisy: one
1000-throw RRPS match has a standard deviation near 26, so a program that "beats" another by
13 over four matches may be no better at all, and a Nash meta-solver then puts all of sigma
on it. The paper is silent on cell sizes; our answer (issue "a meta-game decided by play"):

- every cell carries its standard error, and the loop can size a cell by its 95% confidence
  interval (``csro.simulate.StoredSimulator.play_sized``): simulation costs milliseconds a
  match, an LLM call tens of seconds;
- after each meta-solve, ``support_changes`` re-solves the meta-game on resampled payoff
  tables (each cell drawn from a normal with its mean and standard error, made exactly
  antisymmetric as the solver's input is) and reports how often sigma's support differs:
  0 means the data decide sigma; a high share means the noise does;
- ``meta_game.select: strongest`` (``strongest_plausible``) lets the data choose among the
  equilibria the noise cannot tell apart. In repeated RPS every policy's expected return
  against uniform random play is 0, so with the random initial policy in the population
  sigma = random is always an equilibrium of U, and the LP's vertex -- random, or a program
  that "beat" another by noise -- is an accident of the estimate. Among the mixtures that no
  member beats by more than the 95% CI of its cells, ``strongest_plausible`` takes the one
  with the highest mean return against the population: weight moves to the members that
  exploit others and away from those some member exploits.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np
from scipy.optimize import linprog

from csro.evaluation import Z95, PayoffTable
from csro.solvers.meta import (
    MetaSolver,
    clean_distribution,
    get_meta_solver,
    symmetric_sigma,
)

SUPPORT_EPS = 1e-6  # a weight above this is in the support


@dataclasses.dataclass(frozen=True)
class EmpiricalGame:
    """U[i, j]: mean return of policy i against policy j, with standard errors and counts.

    The symmetric zero-sum case of the CSRO loop: the diagonal (a policy against itself) is
    0 by symmetry and not simulated (standard error 0, count 0).
    """

    names: tuple[str, ...]
    payoffs: np.ndarray
    sem: np.ndarray
    counts: np.ndarray

    @classmethod
    def symmetric(cls, table: PayoffTable, names: list[str]) -> "EmpiricalGame":
        n = len(names)
        payoffs, sem, counts = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n), dtype=int)
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if i != j:
                    cell = table.cell(a, b)
                    payoffs[i, j], sem[i, j], counts[i, j] = cell.mean, cell.sem, cell.count
        return cls(tuple(names), payoffs, sem, counts)

    @property
    def ci(self) -> np.ndarray:
        """Half-width of each cell's 95% confidence interval."""
        return Z95 * self.sem


def support(sigma: np.ndarray) -> frozenset[int]:
    return frozenset(int(i) for i in np.flatnonzero(np.asarray(sigma) > SUPPORT_EPS))


def strongest_plausible(game: EmpiricalGame) -> np.ndarray:
    """Among the mixtures that no member beats by more than its cells' 95% CI, the one with
    the highest mean return against the population (the ``strongest`` selection).

    With S = (U - U^T) / 2 (the antisymmetric game the solvers see) and C the symmetrised CI
    half-widths, member j's return against sigma is -sigma^T S[:, j]; sigma is *plausible*
    when sigma^T (S + C)[:, j] >= 0 for every j -- an epsilon-equilibrium of the symmetric
    zero-sum game (value 0) with epsilon set cell by cell by the data. Every exact Nash sigma
    of S is plausible, so the LP (HiGHS) is always feasible; its objective is
    mean_j sigma^T S[:, j]. With exact cells (C = 0) it is the Nash equilibrium of S that
    gains most against the population. Our construction (the CSRO paper is silent).
    """
    s = 0.5 * (game.payoffs - game.payoffs.T)
    c = 0.5 * (game.ci + game.ci.T)
    n = len(s)
    if n == 1:
        return np.ones(1)
    result = linprog(-s.mean(axis=1), A_ub=-(s + c).T, b_ub=np.zeros(n), A_eq=np.ones((1, n)), b_eq=[1.0],
                     bounds=[(0.0, None)] * n, method="highs")
    if not result.success:  # cannot happen for a finite table (Nash is feasible); say so if it does
        raise RuntimeError(f"strongest_plausible: the LP failed: {result.message}")
    return clean_distribution(result.x)


def meta_sigma(game: EmpiricalGame, solver: str | MetaSolver, select: str = "solver") -> np.ndarray:
    """Sigma of the symmetric meta-game: the meta-solver's, or ``strongest_plausible``."""
    if select == "strongest":
        return strongest_plausible(game)
    return symmetric_sigma(game.payoffs, solver)


def support_changes(game: EmpiricalGame, solver: str, sigma: np.ndarray, resamples: int, seed: int,
                    select: str = "solver") -> float:
    """The share of ``resamples`` resampled games whose sigma has another support than ``sigma``.

    Each resample draws every off-diagonal cell from N(mean, sem^2) (keeping its standard
    error) and is solved as the run solves (``meta_sigma`` with a fresh ``solver``: a stateful
    solver starts from scratch, our choice, so the resamples do not disturb the run's own
    solver instance).
    """
    if resamples <= 0 or len(game.names) < 2:
        return 0.0
    rng = np.random.default_rng(seed)
    base = support(sigma)
    changed = 0
    for _ in range(resamples):
        u = game.payoffs + rng.standard_normal(game.payoffs.shape) * game.sem
        np.fill_diagonal(u, 0.0)
        resampled = dataclasses.replace(game, payoffs=u)
        changed += support(meta_sigma(resampled, get_meta_solver(solver), select)) != base
    return changed / resamples


@dataclasses.dataclass(frozen=True)
class ProfileGame:
    """The empirical game of per-player populations (n players, or seats that differ).

    ``payoffs[p][i_0, ..., i_{N-1}]`` is the mean return of seat p when player q plays member
    ``i_q`` of its population (the profile played with every policy in its own seat);
    ``sem`` the standard errors, ``counts`` the matches behind each profile.
    """

    names: tuple[tuple[str, ...], ...]
    payoffs: tuple[np.ndarray, ...]
    sem: tuple[np.ndarray, ...]
    counts: np.ndarray

    @classmethod
    def of(cls, names: Sequence[Sequence[str]], returns: dict[tuple[str, ...], list[tuple[float, ...]]]) -> "ProfileGame":
        """From each profile's match returns (profile of names, in seat order -> per-match returns)."""
        shape = tuple(len(n) for n in names)
        n = len(names)
        payoffs = [np.zeros(shape) for _ in range(n)]
        sem = [np.zeros(shape) for _ in range(n)]
        counts = np.zeros(shape, dtype=int)
        for index in np.ndindex(*shape):
            rows = np.asarray(returns[tuple(names[p][i] for p, i in enumerate(index))], dtype=float)
            counts[index] = len(rows)
            for p in range(n):
                payoffs[p][index] = rows[:, p].mean()
                sem[p][index] = rows[:, p].std(ddof=1) / math.sqrt(len(rows)) if len(rows) > 1 else 0.0
        return cls(tuple(tuple(x) for x in names), tuple(payoffs), tuple(sem), counts)
