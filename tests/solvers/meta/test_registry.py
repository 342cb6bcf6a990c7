"""Tests of the meta-solver registry, its resolver, symmetric_sigma and the public surface."""

import numpy as np
import pytest

import csro.solvers.meta as meta
from csro.errors import ConfigError
from csro.solvers.meta import META_SOLVERS, get_meta_solver, meta_solver_options, symmetric_sigma

from ._games import PENNIES, WEIGHTED_RPS, WEIGHTED_RPS_EQ

NAMES = ["alpharank", "cce", "ce", "gambit", "nash", "pm", "prd", "rm", "shor", "shor-eval", "uniform"]


def test_registry_names():
    assert sorted(META_SOLVERS) == NAMES


def test_unknown_name_lists_valid_names():
    with pytest.raises(ConfigError) as err:
        get_meta_solver("lemke")
    assert "'lemke'" in str(err.value)
    for name in NAMES:
        assert name in str(err.value)


def test_options_checked():
    assert get_meta_solver("prd", steps=10).steps == 10
    assert meta_solver_options("prd") == ["dt", "gamma", "steps"]
    assert meta_solver_options("shor") == []  # its call counter is state, not an option
    with pytest.raises(ConfigError, match="valid: dt, gamma, steps"):
        get_meta_solver("prd", iterations=10)
    with pytest.raises(ConfigError, match=r"\(none\)"):
        get_meta_solver("uniform", steps=3)
    with pytest.raises(ConfigError):
        get_meta_solver("rm", iterations=-1)


def test_fresh_instances():
    a, b = get_meta_solver("shor"), get_meta_solver("shor")
    a.solve(PENNIES)
    assert (a.calls, b.calls) == (1, 0)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "alpharank"])
def test_every_solver_returns_distributions(name):
    opts = {"prd": {"steps": 200}, "rm": {"iterations": 200}, "nash": {"approx_steps": 200},
            "pm": {"iterations": 200}}.get(name, {})
    solver = get_meta_solver(name, **opts)
    for game in (WEIGHTED_RPS, [np.ones((2, 3)), np.zeros((2, 3))],
                 [np.arange(8.0).reshape(2, 2, 2)] * 3):
        sigmas = solver.solve(game)
        shape = np.shape(game[0]) if isinstance(game, list) else game.shape
        assert [len(s) for s in sigmas] == list(shape)
        for s in sigmas:
            assert np.all(s >= 0) and s.sum() == pytest.approx(1.0)


def test_symmetric_sigma():
    np.testing.assert_allclose(symmetric_sigma(WEIGHTED_RPS), WEIGHTED_RPS_EQ, atol=1e-9)
    # A noisy / constant-sum estimate is antisymmetrised first: win probabilities P with
    # P + P^T = 1 give the same game as P - 1/2.
    p = 0.5 + 0.1 * WEIGHTED_RPS
    np.testing.assert_allclose(symmetric_sigma(p), WEIGHTED_RPS_EQ, atol=1e-9)
    s = symmetric_sigma(WEIGHTED_RPS, solver=get_meta_solver("rm", iterations=5000))
    np.testing.assert_allclose(s, WEIGHTED_RPS_EQ, atol=0.03)
    with pytest.raises(ValueError):
        symmetric_sigma(np.zeros((2, 3)))


def test_exported_members():
    assert sorted(meta.__all__) == sorted([
        "META_SOLVERS", "AlphaRankSolver", "MetaSolver", "NashSolver", "PMSolver", "PRDSolver",
        "RMSolver", "ShorEvalSolver", "ShorTrainSolver", "UniformSolver", "as_payoff_tensors", "clean_distribution",
        "get_meta_solver", "lemke_howson", "meta_nash_conv", "meta_solver_options",
        "shor_iterate", "symmetric_sigma", "values_against", "zero_sum_maximin",
        # general-sum and n-player (issue 16)
        "CCESolver", "CESolver", "GambitNashSolver", "JointMetaSolver", "cce_gap", "ce_gap",
        "joint_marginals", "meta_gap", "others_marginal", "player_regrets", "product_joint",
        "recommendation_conditionals",
    ])
