"""CE / CCE meta-solvers and the joint-sigma helpers.

Every equilibrium claim is checked by ``_max_violation`` below, which walks the profiles
with plain loops and the payoff tables, independently of the LP rows and of ``_joint``.
"""

import itertools

import numpy as np
import pyspiel
import pytest

from csro.errors import ConfigError
from csro.solvers.meta import (
    CCESolver,
    CESolver,
    NashSolver,
    cce_gap,
    ce_gap,
    get_meta_solver,
    joint_marginals,
    meta_gap,
    meta_nash_conv,
    others_marginal,
    player_regrets,
    product_joint,
    recommendation_conditionals,
)

from ._games import jordan_game


def _max_violation(tensors, joint, coarse):
    """The largest deviation gain any player has from ``joint`` (<= 0 at a CE / CCE)."""
    shape = joint.shape
    worst = -np.inf
    for i, n in enumerate(shape):
        for dev in range(n):
            recs = [None] if coarse else range(n)
            for rec in recs:
                gain = 0.0
                for prof in itertools.product(*map(range, shape)):
                    if rec is not None and prof[i] != rec:
                        continue
                    moved = prof[:i] + (dev,) + prof[i + 1:]
                    gain += joint[prof] * (tensors[i][moved] - tensors[i][prof])
                if rec is None or rec != dev:
                    worst = max(worst, gain)
    return worst


def _matrix_game(name):
    g = pyspiel.load_game(name)
    return [np.array(g.row_utilities()), np.array(g.col_utilities())]


def _random_three_player(seed, n=4):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, n, n)) for _ in range(3)]


CHICKEN = _matrix_game("matrix_cd")  # Dare/Chicken: DD (0,0), DC (4,1), CD (1,4), CC (3,3)
SHAPLEY = _matrix_game("matrix_shapleys_game")
GAMES = {"chicken": CHICKEN, "shapley": SHAPLEY, "jordan": jordan_game(),
         "random3p": _random_three_player(0), "random3p_asym": _random_three_player(1, 3)}


@pytest.mark.parametrize("game", sorted(GAMES))
@pytest.mark.parametrize("selection", ["welfare", "maxmin"])
@pytest.mark.parametrize("solver", [CESolver, CCESolver])
def test_solution_is_an_equilibrium_within_1e9(game, selection, solver):
    tensors = GAMES[game]
    joint = solver(selection=selection).solve_joint(tensors)
    assert joint.shape == tensors[0].shape
    assert joint.min() >= 0 and joint.sum() == pytest.approx(1.0, abs=1e-12)
    assert _max_violation(tensors, joint, coarse=solver is CCESolver) <= 1e-9
    gap = (cce_gap if solver is CCESolver else ce_gap)(tensors, joint)
    assert gap <= 1e-9


def test_chicken_figures_derived_by_hand():
    # CE constraints (row; the column's are the mirror image): recommended Chicken,
    # deviating to Dare gains sigma(CC) (4-3) + sigma(CD) (0-1) <= 0, i.e. sigma(CC) <= sigma(CD);
    # recommended Dare: sigma(DD) <= sigma(DC). Welfare 6 sigma(CC) + 5 (sigma(CD) + sigma(DC))
    # is largest at sigma(CC) = sigma(CD) = sigma(DC) = 1/3: 16/3. The uniform joint meets every
    # constraint with equality, so the most mixed CE is uniform (min probability 1/4).
    welfare = CESolver().solve_joint(CHICKEN)
    np.testing.assert_allclose(welfare, [[0.0, 1 / 3], [1 / 3, 1 / 3]], atol=1e-9)
    assert float(np.sum(welfare * (CHICKEN[0] + CHICKEN[1]))) == pytest.approx(16 / 3, abs=1e-9)
    np.testing.assert_allclose(CESolver(selection="maxmin").solve_joint(CHICKEN), np.full((2, 2), 0.25), atol=1e-9)


def test_shapley_figures():
    # Each off-diagonal profile pays 1 to exactly one player, the diagonal nothing: welfare <= 1,
    # and uniform play off the diagonal is a CE reaching it. The uniform joint (the unique Nash
    # equilibrium's product) is a CE whose smallest probability, 1/9, cannot be beaten.
    for solver in (CESolver(), CCESolver()):
        joint = solver.solve_joint(SHAPLEY)
        assert float(np.sum(joint * (SHAPLEY[0] + SHAPLEY[1]))) == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(CESolver(selection="maxmin").solve_joint(SHAPLEY), np.full((3, 3), 1 / 9),
                               atol=1e-9)


def test_cce_contains_ce_and_gaps_order():
    tensors = GAMES["random3p"]
    ce = CESolver().solve_joint(tensors)
    cce = CCESolver().solve_joint(tensors)
    total = np.sum(tensors, axis=0)
    assert float(np.sum(cce * total)) >= float(np.sum(ce * total)) - 1e-9  # every CE is a CCE
    assert _max_violation(tensors, ce, coarse=True) <= 1e-9
    # the CCE gap never exceeds the CE gap (a fixed deviation is one deviation function)
    rng = np.random.default_rng(3)
    for _ in range(5):
        j = rng.dirichlet(np.ones(64)).reshape(4, 4, 4)
        assert cce_gap(tensors, j) <= ce_gap(tensors, j) + 1e-12


def test_gaps_on_known_profiles():
    # All mass on (Dare, Dare): each player, told Dare, gains 1 by Chicken (1 - 0).
    dd = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert ce_gap(CHICKEN, dd) == pytest.approx(2.0)
    assert cce_gap(CHICKEN, dd) == pytest.approx(2.0)
    assert player_regrets(CHICKEN, dd) == pytest.approx([1.0, 1.0])
    assert meta_gap(CHICKEN, dd, "ce") == pytest.approx(2.0)
    # A product of Nash strategies is a CE: the gaps vanish with NashConv.
    sig = NashSolver().solve(CHICKEN)
    assert meta_gap(CHICKEN, sig) == pytest.approx(0.0, abs=1e-9)
    assert meta_gap(CHICKEN, product_joint(sig), "ce") == pytest.approx(0.0, abs=1e-9)
    sig3 = [np.full(2, 0.5)] * 3
    assert meta_nash_conv(jordan_game(), sig3) == pytest.approx(0.0, abs=1e-12)
    assert ce_gap(jordan_game(), product_joint(sig3)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="concept"):
        meta_gap(CHICKEN, dd, "correlated")
    with pytest.raises(ValueError, match="shape"):
        ce_gap(CHICKEN, np.full(3, 1 / 3))


def test_oracle_targets():
    rng = np.random.default_rng(5)
    joint = rng.dirichlet(np.ones(24)).reshape(2, 3, 4)
    marg = joint_marginals(joint)
    assert [m.shape for m in marg] == [(2,), (3,), (4,)]
    # the others' marginal of player 1 is a distribution over (player 0, player 2) profiles
    om = others_marginal(joint, 1)
    assert om.shape == (2, 4)
    np.testing.assert_allclose(om, np.einsum("abc->ac", joint))
    p_rec, cond = recommendation_conditionals(joint, 2)
    np.testing.assert_allclose(p_rec, marg[2])
    assert cond.shape == (4, 2, 3)
    for c in range(4):
        np.testing.assert_allclose(cond[c], joint[:, :, c] / joint[:, :, c].sum())
    # independent play: every conditional is the product of the others' sigmas
    sig = [rng.dirichlet(np.ones(n)) for n in (2, 3, 4)]
    _, cond = recommendation_conditionals(product_joint(sig), 0)
    for a in range(2):
        np.testing.assert_allclose(cond[a], np.outer(sig[1], sig[2]))
    # a recommendation never made has no target
    joint[1] = 0
    joint /= joint.sum()
    p_rec, cond = recommendation_conditionals(joint, 0)
    assert p_rec[1] == 0 and not cond[1].any()


def test_solve_gives_marginals_and_registry_options():
    solver = get_meta_solver("cce", selection="maxmin")
    sig = solver.solve(CHICKEN)
    np.testing.assert_allclose(sig[0], solver.solve_joint(CHICKEN).sum(axis=1))
    with pytest.raises(ConfigError, match="selection"):
        get_meta_solver("ce", selection="entropy")
    with pytest.raises(ConfigError, match="feasibility_tol"):
        CESolver(feasibility_tol=0.0)


def test_zero_sum_ce_marginals_are_the_value():
    # In a two-player zero-sum game every CE gives each player the value of the game.
    a = np.array([[0.0, -1.0, 2.0], [1.0, 0.0, -3.0], [-2.0, 3.0, 0.0]])
    for sel in ("welfare", "maxmin"):
        joint = CESolver(selection=sel).solve_joint(a)
        assert float(np.sum(joint * a)) == pytest.approx(0.0, abs=1e-9)
