"""Tests of the uniform meta-solver."""

import numpy as np

from csro.solvers.meta import UniformSolver
from ._games import DOMINATED, jordan_game


def test_uniform_ignores_payoffs():
    x, y = UniformSolver().solve(DOMINATED)
    np.testing.assert_allclose(x, np.full(4, 0.25))
    np.testing.assert_allclose(y, np.full(3, 1 / 3))
    assert all(np.allclose(s, 0.5) for s in UniformSolver().solve(jordan_game()))
