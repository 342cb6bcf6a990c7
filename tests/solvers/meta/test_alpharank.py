"""Tests of the alpha-rank meta-solver (OpenSpiel's egt.alpharank)."""

import numpy as np
import pytest

pytest.importorskip("networkx", reason="OpenSpiel's egt.alpharank imports networkx")

from csro.solvers.meta import AlphaRankSolver  # noqa: E402

from ._games import RPS  # noqa: E402


def test_rps_marginals_uniform():
    for s in AlphaRankSolver().solve(RPS):
        np.testing.assert_allclose(s, np.full(3, 1 / 3), atol=1e-6)


def test_prisoners_dilemma_all_mass_on_defect():
    a = np.array([[3.0, 0.0], [5.0, 1.0]])  # rows: cooperate, defect
    x, y = AlphaRankSolver().solve([a, a.T])
    np.testing.assert_allclose(x, [0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(y, [0.0, 1.0], atol=1e-6)


def test_marginal_order_in_asymmetric_shapes():
    # Row (2 strategies) has dominant row 1; column (3) has dominant column 2. If the joint
    # distribution were unflattened in the wrong order the marginals would be wrong.
    a = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    b = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    for solver in (AlphaRankSolver(), AlphaRankSolver(alpha=10.0)):
        x, y = solver.solve([a, b])
        np.testing.assert_allclose(x, [0.0, 1.0], atol=1e-3)
        np.testing.assert_allclose(y, [0.0, 0.0, 1.0], atol=1e-3)


def test_single_epsilon_computation_and_option_errors():
    from csro.errors import ConfigError

    for s in AlphaRankSolver(epsilon=1e-4).solve(RPS):
        np.testing.assert_allclose(s, np.full(3, 1 / 3), atol=1e-6)
    with pytest.raises(ConfigError, match="not both"):
        AlphaRankSolver(alpha=1.0, epsilon=0.1)
    # finite alpha so large that OpenSpiel's fixation probabilities overflow
    with pytest.raises(ConfigError, match="smaller"):
        AlphaRankSolver(alpha=1e6).solve(100.0 * RPS)
