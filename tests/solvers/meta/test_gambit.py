"""The pygambit Nash meta-solver, cross-checked against our own solvers and checks."""

import numpy as np
import pygambit
import pytest

from csro.errors import ConfigError
from csro.solvers.meta import GambitNashSolver, NashSolver, PRDSolver, RMSolver, get_meta_solver, meta_nash_conv

from ._games import WEIGHTED_RPS, WEIGHTED_RPS_EQ, dominant_three_player, jordan_game


def test_two_player_zero_sum_agrees_with_our_lp():
    sig = GambitNashSolver().solve(WEIGHTED_RPS)  # unique equilibrium (1/2, 1/3, 1/6)
    lp = NashSolver().solve(WEIGHTED_RPS)
    for s, t in zip(sig, lp):
        np.testing.assert_allclose(s, WEIGHTED_RPS_EQ, atol=1e-6)
        np.testing.assert_allclose(s, t, atol=1e-6)


@pytest.mark.parametrize("method", ["logit", "gnm"])
def test_three_player_games_with_known_equilibria(method):
    solver = GambitNashSolver(method=method)
    # strictly dominant strategy 2 for everyone: our regret matching finds it too
    t = dominant_three_player()
    ours = RMSolver(iterations=5000).solve(t)
    for s, o in zip(solver.solve(t), ours):
        np.testing.assert_allclose(s, [0.0, 0.0, 1.0], atol=1e-6)
        np.testing.assert_allclose(s, o, atol=1e-3)
    # Jordan's game: unique equilibrium, everyone (1/2, 1/2), where PRD stays too
    for s, o in zip(solver.solve(jordan_game()), PRDSolver(steps=2000).solve(jordan_game())):
        np.testing.assert_allclose(s, [0.5, 0.5], atol=1e-6)
        np.testing.assert_allclose(s, o, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_random_three_player_answer_is_nash_by_our_measure(seed):
    rng = np.random.default_rng(seed)
    tensors = [rng.normal(size=(4, 3, 5)) for _ in range(3)]
    sig = GambitNashSolver().solve(tensors)
    spread = max(float(np.ptp(t)) for t in tensors)
    assert meta_nash_conv(tensors, sig) <= 1e-6 * spread
    # gambit's exact enumeration (a different algorithm) agrees on 2x2x2 games: each of its
    # equilibria has NashConv ~0 by our measure, and the logit answer is one of them (generic
    # payoffs: integer ones give continua of equilibria that enumeration lists only in part)
    small = [rng.normal(size=(2, 2, 2)) for _ in range(3)]
    game = pygambit.StrategicGame.from_arrays(*small)
    found = [[np.array([float(p) for _, p in mixed]) for mixed in eq]
             for eq in pygambit.nash.enumpoly_solve(game).equilibria]
    assert found
    for eq in found:
        assert meta_nash_conv(small, eq) <= 1e-9
    ours = GambitNashSolver().solve(small)
    assert min(max(np.abs(a - b).max() for a, b in zip(ours, eq)) for eq in found) <= 1e-5


def test_registry_and_options():
    assert isinstance(get_meta_solver("gambit", method="gnm"), GambitNashSolver)
    with pytest.raises(ConfigError, match="method"):
        GambitNashSolver(method="lemke")
    with pytest.raises(ConfigError, match="maxregret"):
        GambitNashSolver(maxregret=0.0)


def test_nash_solver_uses_gambit_beyond_two_players(monkeypatch):
    import csro.solvers.meta._nash as nash_module

    rng = np.random.default_rng(9)
    tensors = [rng.normal(size=(3, 3, 3)) for _ in range(3)]
    for s, g in zip(NashSolver().solve(tensors), GambitNashSolver().solve(tensors)):
        np.testing.assert_array_equal(s, g)

    class Failing(GambitNashSolver):
        def _solve(self, tensors):
            raise RuntimeError("no equilibrium")

    monkeypatch.setattr(nash_module, "GambitNashSolver", Failing)
    t = dominant_three_player()
    for s in NashSolver(approx_steps=3000).solve(t):  # the PRD/RM approximation takes over
        np.testing.assert_allclose(s, [0.0, 0.0, 1.0], atol=1e-3)
