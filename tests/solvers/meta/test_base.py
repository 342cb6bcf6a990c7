"""Tests of the payoff conventions and helpers in csro.solvers.meta._base."""

import numpy as np
import pytest

from csro.solvers.meta._base import (
    as_payoff_tensors,
    clean_distribution,
    expected_payoffs,
    is_constant_sum,
    meta_nash_conv,
    values_against,
)
from ._games import DIAGONAL, DIAGONAL_EQ, DIAGONAL_VALUE, RPS, jordan_game


def test_matrix_means_zero_sum_row_player():
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    t = as_payoff_tensors(a)
    assert len(t) == 2
    np.testing.assert_array_equal(t[0], a)
    np.testing.assert_array_equal(t[1], -a)  # column player's payoff, indexed [row, col]


@pytest.mark.parametrize("bad", [[np.zeros((2, 2))], [np.zeros((2, 2)), np.zeros((2, 3))],
                                 [np.zeros(2), np.zeros(2)], [], [np.full((2, 2), np.nan)] * 2])
def test_bad_shapes_raise(bad):
    with pytest.raises(ValueError):
        as_payoff_tensors(bad)


def test_values_against_matches_einsum_three_players():
    t = jordan_game()
    rng = np.random.default_rng(0)
    sig = [rng.dirichlet(np.ones(2)) for _ in range(3)]
    np.testing.assert_allclose(values_against(t[0], sig, 0), np.einsum("abc,b,c->a", t[0], sig[1], sig[2]))
    np.testing.assert_allclose(values_against(t[1], sig, 1), np.einsum("abc,a,c->b", t[1], sig[0], sig[2]))
    np.testing.assert_allclose(values_against(t[2], sig, 2), np.einsum("abc,a,b->c", t[2], sig[0], sig[1]))


def test_nash_conv_zero_at_equilibrium_and_known_off_it():
    assert meta_nash_conv(DIAGONAL, [DIAGONAL_EQ, DIAGONAL_EQ]) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(expected_payoffs(as_payoff_tensors(DIAGONAL), [DIAGONAL_EQ] * 2),
                               [DIAGONAL_VALUE, -DIAGONAL_VALUE])
    # RPS, row plays Rock, column uniform: row gains 0 (all rows earn 0 vs uniform);
    # column's best reply Paper earns 1 against the column's current 0.
    rock = np.array([1.0, 0.0, 0.0])
    assert meta_nash_conv(RPS, [rock, np.full(3, 1 / 3)]) == pytest.approx(1.0)


def test_constant_sum_and_cleaning():
    assert is_constant_sum([RPS + 2.0, -RPS])
    assert not is_constant_sum([RPS, RPS])
    np.testing.assert_allclose(clean_distribution(np.array([2.0, -1e-17, 2.0])), [0.5, 0.0, 0.5])
    np.testing.assert_allclose(clean_distribution(np.zeros(4)), np.full(4, 0.25))
