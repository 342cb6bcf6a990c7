"""Tests of the SHOR-PSRO training/evaluation solvers and the PM-PSRO interpretation."""

import math

import numpy as np
import pytest

from csro.solvers.meta import PMSolver, ShorEvalSolver, ShorTrainSolver, meta_nash_conv, shor_iterate
from csro.solvers.meta._shor import shor_eval_iterations, shor_train_schedule

from ._games import DOMINATED, RPS, WEIGHTED_RPS, dominant_three_player

# Zero-sum 2x2, row payoff A = [[2, 0], [0, 1]] (column pays A), for hand-checked steps.
A22 = np.array([[2.0, 0.0], [0.0, 1.0]])


def test_train_schedule_endpoints():
    s0 = shor_train_schedule(0, 1)
    assert s0 == pytest.approx({"iterations": 1000, "lam": 0.3, "temperature": 0.5,
                                "delta": 0.05, "beta": 0.5})
    s75 = shor_train_schedule(75, 51)  # rho = 1; iterations 1000 + 20 * 50 = 2000
    assert s75 == pytest.approx({"iterations": 2000, "lam": 0.05, "temperature": 0.01,
                                 "delta": 0.001, "beta": 0.5})
    assert shor_train_schedule(150, 300) == pytest.approx(s75 | {"iterations": 5000})  # clipped
    mid = shor_train_schedule(30, 10)  # rho = 0.4: lam = 0.3 - 0.25 * 0.4 = 0.2
    assert mid["lam"] == pytest.approx(0.2)
    assert mid["temperature"] == pytest.approx(0.5 - 0.49 * 0.4)
    assert mid["delta"] == pytest.approx(0.05 - 0.049 * 0.4)
    assert mid["iterations"] == 1180
    assert [shor_eval_iterations(n) for n in (1, 101, 200)] == [8000, 13000, 15000]


def test_one_training_iteration_by_hand():
    # k = 0: lam 0.3, T 0.5, delta 0.05, beta 0.5; sigma starts uniform, Q = g_prev = 0.
    # Player 0: u = A (1/2, 1/2) = (1, 0.5); g = u - 0.75 = (0.25, -0.25);
    #   gh = 1.5 g + 0.05 (1 - 0.5) = (0.4, -0.35); / 0.4 -> (1, -0.875); Q = (1, 0);
    #   ORM = (1, 0); SM = softmax((2, 1)) = (e, 1) / (e + 1);
    #   sigma_0 = 0.7 (1, 0) + 0.3 SM.
    e = math.e
    s0 = 0.7 * np.array([1.0, 0.0]) + 0.3 * np.array([e / (e + 1), 1 / (e + 1)])
    # Player 1 (payoff -A) sees the new sigma_0: u = (-2 s0[0], -s0[1]); g = u - mean(u)
    #   = (-d, d) with d = (2 s0[0] - s0[1]) / 2 > 0; gh = 1.5 g + 0.025 has max |gh| at index 1
    #   -> Q = (0, 1); ORM = (0, 1); SM = softmax(u / 0.5).
    u1 = np.array([-2 * s0[0], -s0[1]])
    sm1 = np.exp(u1 / 0.5) / np.exp(u1 / 0.5).sum()
    s1 = 0.7 * np.array([0.0, 1.0]) + 0.3 * sm1
    params = shor_train_schedule(0, 2) | {"iterations": 1}
    out = shor_iterate([A22, -A22], average=True, **params)
    np.testing.assert_allclose(out[0], s0, atol=1e-12)
    np.testing.assert_allclose(out[1], s1, atol=1e-12)
    np.testing.assert_allclose(out[0], [0.91931758, 0.08068242], atol=1e-8)


def test_two_iterations_optimism_uses_previous_gain():
    # Eval parameters (lam 0.01, T 0.001, beta 0.2, delta 0) on matching pennies from the
    # row player's view, iteration 2 of player 0 must use gh = 1.2 g - 0.2 g_prev.
    p = np.array([[1.0, -1.0], [-1.0, 1.0]])
    one = shor_iterate([p, -p], iterations=1, lam=0.0, temperature=1.0, beta=0.2, delta=0.0,
                       average=False)
    # Iteration 1: u0 = 0 -> g = 0, Q0 = 0, sigma_0 uniform; player 1: u1 = 0, sigma_1 uniform.
    np.testing.assert_allclose(one[0], [0.5, 0.5])
    # Make player 0 face a biased opponent: a 2x2 whose column 0 is dominant for player 1.
    b = np.array([[0.0, 1.0], [0.0, 1.0]])  # player 1 (columns) always prefers column 0 ...
    a = np.array([[1.0, 0.0], [0.0, 0.0]])  # ... and player 0 then prefers row 0
    two = shor_iterate([a, -b], iterations=2, lam=0.0, temperature=1.0, beta=0.2, delta=0.0,
                       average=False)
    # It 1: p0: u = (0.5, 0), g = (0.25, -0.25), gh = 1.2 g -> Q0 = (0.3/0.3=1, 0) -> (1, 0).
    #       p1: u = -b^T (1, 0) = (0, -1), g = (0.5, -0.5) -> Q1 = (1, 0) -> sigma_1 = (1, 0).
    # It 2: p0: u = (1, 0), g = (0.5, -0.5), gh = 1.2 g - 0.2 (0.25, -0.25) = (0.55, -0.55)
    #       -> normalised (1, -1); Q0 = (2, 0) -> sigma_0 = (1, 0).
    np.testing.assert_allclose(two[0], [1.0, 0.0])
    np.testing.assert_allclose(two[1], [1.0, 0.0])


def test_training_solver_counts_calls():
    solver = ShorTrainSolver()
    first = solver.solve(WEIGHTED_RPS)
    second = solver.solve(WEIGHTED_RPS)
    assert solver.calls == 2
    assert not np.allclose(first[0], second[0])  # k changed lam, T and delta
    solver.reset()
    np.testing.assert_allclose(solver.solve(WEIGHTED_RPS)[0], first[0])


def test_rps_uniform_and_dominated_strategy():
    for solver in (ShorTrainSolver(), ShorEvalSolver(), PMSolver()):
        for s in solver.solve(RPS):
            np.testing.assert_allclose(s, np.full(3, 1 / 3), atol=1e-9)
    x, _ = ShorEvalSolver().solve(DOMINATED)
    assert x[3] < 1e-6
    x, _ = PMSolver().solve(DOMINATED)
    assert x[3] < 1e-6


def test_pm_near_nash_where_shor_core_is_not():
    # Documented in _shor.py: measured meta NashConv 0.0018 for PM on this game.
    assert meta_nash_conv(WEIGHTED_RPS, PMSolver().solve(WEIGHTED_RPS)) < 0.005
    sig = PMSolver(iterations=500).solve(dominant_three_player())
    assert all(s[2] > 0.99 for s in sig)
