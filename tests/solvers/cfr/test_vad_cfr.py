"""VAD-CFR rules (arXiv 2602.16928, Listing 5) on hand-computed arrays, and the vectorised
running EWMA against a per-infoset Python loop."""

import math

import numpy as np
import pytest

from csro.solvers.cfr import CFRSolver, InfosetBlock, Variant, load_tree
from csro.solvers.cfr._hooks import PolicyAccumulator, PolicyFromRegretAccumulator, RegretAccumulator
from csro.solvers.cfr.vad_cfr import SequentialEWMA, VADAverage, VADPolicy, VADRegret, vad_cfr


def _block(regret, policy=None):
    regret = np.asarray(regret, dtype=float)
    legal = np.ones_like(regret, dtype=bool)
    return InfosetBlock(0, legal, legal.sum(1), regret,
                        np.zeros_like(regret) if policy is None else np.asarray(policy, float),
                        tuple(str(i) for i in range(len(regret))))


def _disc(tau, e):
    return tau**e / (tau**e + 1)


def test_ewma_is_m_in_iteration_zero_then_exact_recurrence():
    m = np.array([0.3, 2.5, 0.0, 7.0, 1.25])
    ewma = SequentialEWMA()
    assert np.array_equal(ewma.advance(m, 0), m)  # iteration 0: E = m at every visit
    rng = np.random.default_rng(0)
    e = ewma.value
    for t in (1, 2):
        m = rng.random(50) * 3
        expected = []
        for x in m:  # the printed source's scalar update, one infoset at a time
            e = 0.1 * x + (1.0 - 0.1) * e
            expected.append(e)
        assert np.array_equal(ewma.advance(m, t), np.array(expected))  # bit-identical


def test_regret_floor_minus_20_and_positive_boost():
    # t = 1 (tau = 2), a fresh instance: E = 0.1 * m + 0.9 * 0 with m = 2 -> v = 0.1
    hook = VADRegret()
    hook.ewma.value = 0.0
    block = _block([[-50.0, 5.0, -1.0]])
    regrets = np.array([[-1.0, 2.0, 0.5]])
    out = hook.update_accumulate_regret(block, 1, regrets)
    v = 0.2 / 2
    alpha = 1.5 - 0.5 * v
    beta = -0.1 - 0.5 * v
    expected = [
        max(-20.0, _disc(2.0, beta) * -50.0 - 1.0),  # -24.7 -> floored at -20
        _disc(2.0, alpha) * 5.0 + 1.1 * 2.0,  # positive r boosted by 1.1
        _disc(2.0, beta) * -1.0 + 1.1 * 0.5,
    ]
    assert expected[0] == -20.0
    np.testing.assert_allclose(out[0], expected, rtol=1e-14)


def test_policy_is_optimistic_projection_to_the_power_1_5():
    hook = VADPolicy()
    hook.ewma.value = 1.0
    t = 3  # tau = 4
    block = _block([[2.0, -1.0, 0.5]])
    regrets = np.array([[0.5, -0.25, -2.0]])
    sigma = hook.get_updated_current_policy(block, t, regrets, None)
    e = 0.1 * 2.0 + 0.9 * 1.0  # m = 2
    v = min(1.0, e / 2)
    alpha, beta = max(0.1, 1.5 - 0.5 * v), -0.1 - 0.5 * v
    omega = (1 / (1 + t / 100)) * max(0.0, 1 - 0.5 * v)
    boosted = [0.55, -0.25, -2.0]
    d = [_disc(4.0, alpha), _disc(4.0, beta), _disc(4.0, alpha)]
    proj = [d[i] * r + omega * boosted[i] for i, r in enumerate([2.0, -1.0, 0.5])]
    w = np.array([max(0.0, x) ** 1.5 for x in proj])
    np.testing.assert_allclose(sigma[0], w / w.sum(), rtol=1e-13)
    # nothing positive -> uniform
    flat = hook.get_updated_current_policy(_block([[-3.0, -3.0]]), t, np.zeros((1, 2)), None)
    np.testing.assert_array_equal(flat, [[0.5, 0.5]])


def test_average_warm_start_accumulates_nothing_before_500():
    hook = VADAverage()
    block = _block([[0.0, 0.0]], policy=[[3.0, 4.0]])
    pol = np.array([[0.25, 0.75]])
    regrets = np.array([[1.0, -0.5]])
    reach = np.array([0.5])
    out = hook.update_accumulate_policy(block, 499, pol, regrets, reach, reach)
    np.testing.assert_array_equal(out, [[3.0, 4.0]])
    out = hook.update_accumulate_policy(block, 500, pol, regrets, reach, reach)
    m = 1.0
    gamma = min(4.0, 2.0 + 1.5 * min(1.0, m / 2))  # 2.75
    w = 501.0**gamma / (1 + m**1.5) * max(0.1, math.sqrt(1 + m / 2))
    np.testing.assert_allclose(out, [[3.0 + w * 0.5 * 0.25, 4.0 + w * 0.5 * 0.75]], rtol=1e-14)


# --- the vectorised hooks equal a per-infoset transcription of the rules ----------------------


class _LoopEWMA:
    def __init__(self):
        self.e = 0.0

    def step(self, m, t):
        self.e = m if t == 0 else 0.1 * m + 0.9 * self.e
        return self.e


def _params(e, t):
    v = min(1.0, e / 2.0)
    a = max(0.1, 1.5 - 0.5 * v)
    b = min(a, -0.1 - 0.5 * v)
    tau = float(t + 1)
    return v, tau**a / (tau**a + 1), tau**b / (tau**b + 1)


class LoopRegret(RegretAccumulator):
    def __init__(self):
        self.ewma = _LoopEWMA()

    def update_accumulate_regret(self, block, t, regrets):
        out = block.cumulative_regret.copy()
        for i in range(len(out)):
            k = int(block.num_actions[i])
            m = max(abs(x) for x in regrets[i, :k])
            _, dp, dn = _params(self.ewma.step(m, t), t)
            for j in range(k):
                r = regrets[i, j] * 1.1 if regrets[i, j] > 0 else regrets[i, j]
                old = out[i, j]
                out[i, j] = max(-20.0, (dp if old >= 0 else dn) * old + r)
        return out


class LoopPolicy(PolicyFromRegretAccumulator):
    def __init__(self):
        self.ewma = _LoopEWMA()

    def get_updated_current_policy(self, block, t, regrets, previous_policy):
        out = np.zeros_like(block.cumulative_regret)
        for i in range(len(out)):
            k = int(block.num_actions[i])
            m = max(abs(x) for x in regrets[i, :k])
            v, dp, dn = _params(self.ewma.step(m, t), t)
            omega = (1.0 / (1.0 + t / 100.0)) * max(0.0, 1.0 - 0.5 * v)
            w = []
            for j in range(k):
                r = regrets[i, j] * 1.1 if regrets[i, j] > 0 else regrets[i, j]
                cum = block.cumulative_regret[i, j]
                w.append(max(0.0, (dp if cum >= 0 else dn) * cum + omega * r) ** 1.5)
            total = sum(w)
            out[i, :k] = [x / total for x in w] if total > 0 else [1.0 / k] * k
        return out


class LoopAverage(PolicyAccumulator):
    def update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach):
        out = block.cumulative_policy.copy()
        if t < 500:
            return out
        for i in range(len(out)):
            k = int(block.num_actions[i])
            m = max(abs(x) for x in regrets[i, :k])
            g = min(4.0, 2.0 + 1.5 * min(1.0, m / 2.0))
            w = float(t + 1) ** g * (1.0 / (1.0 + m**1.5)) * max(0.1, (1.0 + m / 2.0) ** 0.5)
            out[i, :k] += w * reach[i] * policy[i, :k]
        return out


def test_vectorised_vad_equals_per_infoset_loop_on_kuhn():
    tree = load_tree("kuhn_poker(players=3)")
    fast = CFRSolver(tree, vad_cfr(600))
    slow = CFRSolver(tree, Variant("vad-loop", LoopRegret(), LoopPolicy(), LoopAverage()))
    for _ in range(520):
        fast.step()
        slow.step()
    for a, b in zip(fast.blocks, slow.blocks):
        np.testing.assert_allclose(a.cumulative_regret, b.cumulative_regret, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(a.cumulative_policy, b.cumulative_policy, rtol=1e-10)
    assert fast.variant.regret.ewma.value == pytest.approx(slow.variant.regret.ewma.e, rel=1e-12)


def test_vad_average_is_uniform_before_the_warm_start_ends():
    solver = CFRSolver("kuhn_poker", vad_cfr(100))
    solver.run(100)
    for block, avg in zip(solver.blocks, solver.average_policy_arrays()):
        assert not block.cumulative_policy.any()
        np.testing.assert_allclose(avg, block.legal / block.num_actions[:, None])
