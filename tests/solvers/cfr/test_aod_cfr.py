"""AOD-CFR rules (arXiv 2602.16928, Listing 7) on hand-computed arrays."""

import numpy as np

from csro.solvers.cfr import CFRSolver, InfosetBlock
from csro.solvers.cfr.aod_cfr import AODAverage, AODPolicy, AODRegret, aod_cfr


def _block(regret, cum_policy=None, player=0):
    regret = np.asarray(regret, dtype=float)
    legal = np.ones_like(regret, dtype=bool)
    cp = np.zeros_like(regret) if cum_policy is None else np.asarray(cum_policy, float)
    return InfosetBlock(player, legal, legal.sum(1), regret, cp, ("I",) * len(regret))


def test_sign_pattern_scaling_and_scheduled_discounts():
    old = [[1.0, 1.0, -1.0, -1.0, 0.0, 5e-10]]
    r = np.array([[1.0, -1.0, 1.0, -1.0, 1.0, 1.0]])
    # t = 0: tau = 1, alpha = 1, beta = 0.5, both discounts are 1/(1+1) = 0.5
    out = AODRegret().update_accumulate_regret(_block(old), 0, r)
    np.testing.assert_allclose(out, [[0.5 + 1.1, 0.5 - 0.9, -0.5 + 0.7, -0.5 - 1.2, 1.0,
                                      0.5 * 5e-10 + 1.0]])
    # t = 1000: schedule saturated, alpha = 2.5 for R > 0, beta = 0 for R <= 0
    out = AODRegret().update_accumulate_regret(_block([[2.0, -2.0]]), 1000, np.zeros((1, 2)))
    tau = 1001.0
    np.testing.assert_allclose(out, [[2.0 * tau**2.5 / (tau**2.5 + 1), -2.0 * 0.5]])


def test_policy_uses_ema_of_regret_starting_at_zero_updated_after_use():
    hook = AODPolicy()
    r1 = [[2.0, 1.0, -1.0]]
    s1 = hook.get_updated_current_policy(_block(r1), 0, None, None)
    w = np.maximum(0, 1.5 * np.array(r1[0])) ** 2  # EMA 0: x = R + 0.5 R
    np.testing.assert_allclose(s1[0], w / w.sum())
    r2 = [[1.0, 3.0, 0.5]]
    s2 = hook.get_updated_current_policy(_block(r2), 1, None, None)
    ema = 0.1 * np.array(r1[0])
    w = np.maximum(0, np.array(r2[0]) + 0.5 * (np.array(r2[0]) - ema)) ** 2
    np.testing.assert_allclose(s2[0], w / w.sum())
    # players keep separate EMAs
    s_other = hook.get_updated_current_policy(_block(r2, player=1), 1, None, None)
    w = np.maximum(0, 1.5 * np.array(r2[0])) ** 2
    np.testing.assert_allclose(s_other[0], w / w.sum())


def test_average_self_discounts_with_scheduled_gamma():
    hook = AODAverage()
    pol = np.array([[0.5, 0.5]])
    reach = np.array([2.0])
    out = hook.update_accumulate_policy(_block([[0, 0]], [[4.0, 2.0]]), 0, pol, None, reach, reach)
    np.testing.assert_allclose(out, [[4.0 * 0.5 + 1.0, 2.0 * 0.5 + 1.0]])  # gamma 1, T = 1
    t = 250  # gamma = 1 + 4 * 0.5 = 3
    big_t = 251.0**3
    out = hook.update_accumulate_policy(_block([[0, 0]], [[4.0, 2.0]]), t, pol, None, reach, reach)
    np.testing.assert_allclose(out, [[4.0 * big_t / (big_t + 1) + big_t,
                                      2.0 * big_t / (big_t + 1) + big_t]])


def test_aod_converges_on_kuhn():
    solver = CFRSolver("kuhn_poker", aod_cfr(300))
    solver.run(300)
    assert solver.exploitability() < 2e-3
