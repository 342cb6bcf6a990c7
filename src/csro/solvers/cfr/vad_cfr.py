"""VAD-CFR, Volatility-Adaptive Discounted CFR: discovered by AlphaEvolve in Li, Schultz, Hennes,
Lanctot, "Discovering Multiagent Learning Algorithms with Large Language Models", arXiv
2602.16928 (v1, Appendix 7.1, Listing 5). The constants and rules below are those of the
printed source, which differs from the paper's prose summary in places.

With t the 0-based iteration, tau = t + 1, r the instantaneous regret, m = max_a |r_a| and R
the signed cumulative regret:

- Volatility (one scalar EWMA per hook instance, advanced at every infoset call): E = m
  during iteration 0, else E = 0.1 m + 0.9 E; v = min(1, E / 2); alpha = max(0.1, 1.5 - 0.5
  v); beta = min(alpha, -0.1 - 0.5 v); d+ = tau^alpha/(tau^alpha+1), d- likewise with beta.
- Regret: r~ = 1.1 r where r > 0 else r; R <- max(-20, d R + r~), d = d+ where R >= 0 else d-.
- Policy (on the updated R, with the policy hook's own, identical EWMA): omega = max(0, 1 -
  0.5 v) / (1 + t/100); R^ = d(R) R + omega r~; sigma ∝ max(0, R^)^1.5 (uniform if all 0).
- Average: nothing while t < 500 (hard warm start); then with the instantaneous v = min(1,
  m/2), gamma = min(4, 2 + 1.5 v) and w = tau^gamma / (1 + m^1.5) * max(0.1, (1 + m/2)^0.5),
  S <- S + w reach sigma.

Our interpretation (documented in docs/solvers.md): the hooks are called once per infoset
per player update, after the traversal, with the infoset's summed regrets; the running EWMA
visits the player's infosets in canonical order (the order OpenSpiel's Python CFR discovers
them) and carries over from player to player and iteration to iteration. That sequential
scalar is computed exactly by a first-order linear recurrence (``scipy.signal.lfilter``,
bit-identical to the Python loop; tests check it). The printed source's "iteration 0" rule
replaces the spec summary's "first visit" rule. With fewer than 500 iterations the average
policy stays uniform, as in the source.
"""

from __future__ import annotations

import logging

import numpy as np

from csro.solvers.cfr._hooks import (
    PolicyAccumulator,
    PolicyFromRegretAccumulator,
    RegretAccumulator,
    Variant,
    max_abs_regret,
    normalize_rows,
)

log = logging.getLogger(__name__)

EWMA_DECAY = 0.1
MAX_EXPECTED_REGRET = 2.0
BASE_ALPHA, BASE_BETA, SENSITIVITY = 1.5, -0.1, 0.5
BOOST = 1.1
REGRET_FLOOR = -20.0
OPTIMISM_DECAY = 100.0
POLICY_EXPONENT = 1.5
WARMUP = 500
BASE_GAMMA, GAMMA_MAX, GAMMA_SENSITIVITY = 2.0, 4.0, 1.5
STABILITY_EXPONENT, MAGNITUDE_EXPONENT = 1.5, 0.5


class SequentialEWMA:
    """VAD-CFR's scalar EWMA of m, advanced once per infoset, in row order."""

    def __init__(self, decay: float = EWMA_DECAY):
        self.decay = decay
        self.value = 0.0

    def advance(self, m: np.ndarray, t: int) -> np.ndarray:
        """The EWMA value after each row's update (the value each infoset's call sees)."""
        m = np.asarray(m, dtype=np.float64)
        if m.size == 0:
            return m.copy()
        if t == 0:
            out = m.copy()
        else:
            keep = 1.0 - self.decay
            # scipy is imported here, not with the module: it costs ~0.5 s, and under numpy 1.x its
            # import runs `lscpu`, which the sandbox of a discovery run refuses.
            from scipy.signal import lfilter

            out, _ = lfilter([self.decay], [1.0, -keep], m, zi=[keep * self.value])
        self.value = float(out[-1])
        return out


def adaptive_discounts(ewma: np.ndarray, t: int):
    """(volatility, d+, d-) per infoset from the EWMA values."""
    vol = np.minimum(1.0, ewma / MAX_EXPECTED_REGRET)
    alpha = np.maximum(0.1, BASE_ALPHA - SENSITIVITY * vol)
    beta = np.minimum(alpha, BASE_BETA - SENSITIVITY * vol)
    tau = float(t + 1)
    ta, tb = tau**alpha, tau**beta
    return vol, ta / (ta + 1.0), tb / (tb + 1.0)


def boosted(regrets: np.ndarray) -> np.ndarray:
    return np.where(regrets > 0, regrets * BOOST, regrets)


class VADRegret(RegretAccumulator):
    """Signed, volatility-discounted cumulative regret with the -20 floor."""

    def __init__(self):
        self.ewma = SequentialEWMA()

    def update_accumulate_regret(self, block, t, regrets):
        _, d_pos, d_neg = adaptive_discounts(self.ewma.advance(max_abs_regret(regrets), t), t)
        old = block.cumulative_regret
        d = np.where(old >= 0, d_pos[:, None], d_neg[:, None])
        return np.maximum(REGRET_FLOOR, d * old + boosted(regrets))


class VADPolicy(PolicyFromRegretAccumulator):
    """Optimistic projection of the regret, raised to the power 1.5."""

    def __init__(self):
        self.ewma = SequentialEWMA()

    def get_updated_current_policy(self, block, t, regrets, previous_policy):
        vol, d_pos, d_neg = adaptive_discounts(self.ewma.advance(max_abs_regret(regrets), t), t)
        optimism = (1.0 / (1.0 + t / OPTIMISM_DECAY)) * np.maximum(0.0, 1.0 - SENSITIVITY * vol)
        cum = block.cumulative_regret
        d = np.where(cum >= 0, d_pos[:, None], d_neg[:, None])
        projected = d * cum + optimism[:, None] * boosted(regrets)
        return normalize_rows(np.maximum(0.0, projected) ** POLICY_EXPONENT, block.legal)


class VADAverage(PolicyAccumulator):
    """Hard warm start, then regret-magnitude-weighted polynomial averaging."""

    def update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach):
        if t < WARMUP:
            return block.cumulative_policy
        m = max_abs_regret(regrets)
        vol = np.minimum(1.0, m / MAX_EXPECTED_REGRET)
        gamma = np.minimum(GAMMA_MAX, BASE_GAMMA + GAMMA_SENSITIVITY * vol)
        temporal = float(t + 1) ** gamma
        stability = 1.0 / (1.0 + m**STABILITY_EXPONENT)
        magnitude = np.maximum(0.1, (1.0 + m / MAX_EXPECTED_REGRET) ** MAGNITUDE_EXPONENT)
        weight = temporal * stability * magnitude
        return block.cumulative_policy + (weight * reach)[:, None] * policy


def vad_cfr(horizon: int) -> Variant:
    """VAD-CFR (``horizon`` only checked: the 500-iteration warm start is fixed in the source)."""
    if horizon <= WARMUP:
        log.warning("vad-cfr averages nothing before iteration %d (its warm start); with %d "
                    "iterations its average policy stays uniform", WARMUP, horizon)
    return Variant("vad-cfr", VADRegret(), VADPolicy(), VADAverage())
