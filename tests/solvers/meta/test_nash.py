"""Tests of the Nash meta-solver: LP (2p zero-sum), Lemke-Howson (2p general-sum), n-player."""

import numpy as np
import pytest

from csro.errors import ConfigError
from csro.solvers.meta import NashSolver, lemke_howson, meta_nash_conv, zero_sum_maximin

from ._games import (
    DIAGONAL,
    DIAGONAL_EQ,
    DIAGONAL_VALUE,
    DOMINATED,
    PENNIES,
    RPS,
    WEIGHTED_RPS,
    WEIGHTED_RPS_EQ,
    dominant_three_player,
    jordan_game,
)


@pytest.mark.parametrize(
    "game, row, col",
    [
        (RPS, np.full(3, 1 / 3), np.full(3, 1 / 3)),
        (PENNIES, np.full(2, 0.5), np.full(2, 0.5)),
        (WEIGHTED_RPS, WEIGHTED_RPS_EQ, WEIGHTED_RPS_EQ),
        (DIAGONAL, DIAGONAL_EQ, DIAGONAL_EQ),
        (DOMINATED, np.array([1 / 3, 1 / 3, 1 / 3, 0.0]), np.full(3, 1 / 3)),
    ],
)
def test_zero_sum_lp_known_equilibria(game, row, col):
    x, y = NashSolver().solve(game)
    np.testing.assert_allclose(x, row, atol=1e-9)
    np.testing.assert_allclose(y, col, atol=1e-9)


def test_lp_value_and_constant_sum_shift():
    _, _, v = zero_sum_maximin(DIAGONAL)
    assert v == pytest.approx(DIAGONAL_VALUE, abs=1e-12)
    # constant-sum (win probabilities summing to 1) is solved by the same LP
    x, y = NashSolver().solve([DIAGONAL + 1.0, -DIAGONAL])
    np.testing.assert_allclose(x, DIAGONAL_EQ, atol=1e-9)


def test_lemke_howson_battle_of_the_sexes_and_mixed_game():
    # Battle of the sexes: three equilibria; from label 0 Lemke-Howson ends at a pure one.
    a = np.array([[3.0, 0.0], [0.0, 2.0]])
    b = np.array([[2.0, 0.0], [0.0, 3.0]])
    x, y = lemke_howson(a, b, 0)
    assert meta_nash_conv([a, b], [x, y]) == pytest.approx(0.0, abs=1e-12)
    # General-sum 2x2 without pure equilibria: A = [[3, 0], [1, 2]], B = [[0, 2], [3, 1]].
    # Column mixes q on column 0 to make the row indifferent: 3q = q + 2(1 - q) => q = 1/2.
    # Row mixes p on row 0 so the column is indifferent: 3(1 - p) = 2p + (1 - p) => p = 1/2.
    a = np.array([[3.0, 0.0], [1.0, 2.0]])
    b = np.array([[0.0, 2.0], [3.0, 1.0]])
    x, y = NashSolver().solve([a, b])
    np.testing.assert_allclose(x, [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(y, [0.5, 0.5], atol=1e-12)


def test_lemke_howson_random_and_degenerate_games():
    rng = np.random.default_rng(7)
    for _ in range(20):
        a, b = rng.integers(-3, 4, size=(2, 5, 6)).astype(float)  # integer: many ties
        sig = NashSolver().solve([a, b])
        assert meta_nash_conv([a, b], sig) <= 1e-9


def test_n_player_dominant_strategy_is_found():
    t = dominant_three_player()
    sig = NashSolver(approx_steps=5000).solve(t)
    for s in sig:
        np.testing.assert_allclose(s, [0.0, 0.0, 1.0], atol=1e-3)


def test_n_player_jordan_stays_at_mixed_equilibrium():
    sig = NashSolver(approx_steps=2000).solve(jordan_game())
    for s in sig:
        np.testing.assert_allclose(s, [0.5, 0.5], atol=1e-9)


def test_bad_options():
    with pytest.raises(ConfigError):
        NashSolver(approx_steps=0)
