"""The ``strongest`` selection of sigma among the mixtures the data cannot reject."""

import itertools

import numpy as np
import pytest

from csro.metagame import EmpiricalGame, meta_sigma, strongest_plausible, support_changes
from csro.solvers.meta import meta_nash_conv

NAMES = ("random", "exploiter", "naive")
# A table measured in a demo run: random ties everyone up to noise (in RRPS every policy's
# expected return against it is 0); the exploiter crushes the naive program, which "beat"
# random by noise alone.
U = np.array([[0.0, 9.8, -6.4],
              [-9.8, 0.0, 994.0],
              [6.4, -994.0, 0.0]])
CI = np.array([[0.0, 12.6, 13.7],
               [12.6, 0.0, 2.8],
               [13.7, 2.8, 0.0]])


def game(u=U, ci=CI):
    return EmpiricalGame(NAMES, u, ci / 1.959963984540054, np.full(u.shape, 8))


def plausible(sigma, u, ci, tol=1e-9):
    """No member's return against sigma exceeds sigma's CI-weighted slack (checked directly)."""
    return all(-sigma @ u[:, j] <= sigma @ ci[:, j] + tol for j in range(len(u)))


def simplex_grid(n, steps=50):
    for counts in itertools.product(range(steps + 1), repeat=n - 1):
        if sum(counts) <= steps:
            yield np.array([*counts, steps - sum(counts)], dtype=float) / steps


def test_strongest_is_plausible_and_beats_every_plausible_mixture_on_a_grid():
    sigma = strongest_plausible(game())
    assert sigma.sum() == pytest.approx(1.0) and (sigma >= 0).all()
    assert plausible(sigma, U, CI, tol=1e-6)
    best_on_grid = max(x @ U.mean(axis=1) for x in simplex_grid(3) if plausible(x, U, CI))
    assert sigma @ U.mean(axis=1) >= best_on_grid - 1e-6
    assert sigma[1] > 0.99  # the exploiter, not the noise-made winner over random


def test_the_solver_selection_keeps_the_lp_nash():
    sigma = meta_sigma(game(), "nash")
    assert sigma[0] > 0.9  # random: an exact equilibrium of this noisy table
    assert meta_nash_conv([U, -U], [sigma, sigma]) == pytest.approx(0.0, abs=1e-6)


def test_with_exact_cells_it_is_the_nash_equilibrium_that_gains_most():
    # rock-paper-scissors plus a copy of rock: every Nash plays rock (either copy), paper and scissors a third each
    rps = np.array([[0, -1, 1, 0], [1, 0, -1, 1], [-1, 1, 0, -1], [0, -1, 1, 0]], dtype=float)
    exact = EmpiricalGame(("r", "p", "s", "r2"), rps, np.zeros((4, 4)), np.zeros((4, 4), dtype=int))
    sigma = strongest_plausible(exact)
    assert meta_nash_conv([rps, -rps], [sigma, sigma]) == pytest.approx(0.0, abs=1e-9)
    nash = meta_sigma(exact, "nash")
    assert sigma @ rps.mean(axis=1) >= nash @ rps.mean(axis=1) - 1e-12


def test_support_changes_resample_the_selection_the_run_uses():
    sigma = strongest_plausible(game())
    tight = game(ci=CI / 100)
    assert support_changes(tight, "nash", strongest_plausible(tight), 20, seed=3, select="strongest") == 0.0
    assert 0.0 <= support_changes(game(), "nash", sigma, 20, seed=3, select="strongest") <= 1.0
