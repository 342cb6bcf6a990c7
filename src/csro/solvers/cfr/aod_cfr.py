"""AOD-CFR, Asymmetric Optimistic Discounted CFR: an earlier AlphaEvolve discovery in Li,
Schultz, Hennes, Lanctot, arXiv 2602.16928 (v1, Appendix 7.2, Listing 7); rules as printed.

With t 0-based, tau = t + 1 and f = min(1, t / 500):

- Regret: alpha = 1 + 1.5 f, beta = 0.5 - 0.5 f. The instantaneous regret is scaled by the
  sign pattern of (old R, r): (+,+) 1.1, (+,-) 0.9, (-,+) 0.7, (-,-) 1.2, and 1.0 when either
  is within 1e-9 of zero; R <- d R + scale r with d = tau^alpha/(tau^alpha+1) where R > 0,
  else tau^beta/(tau^beta+1). No clipping.
- Policy: a per-(infoset, action) EMA of R, starting at 0 and updated after use,
  E <- 0.1 R + 0.9 E; x = R + 0.5 (R - E); sigma ∝ max(0, x)^2 (uniform if the sum is at
  most 1e-12).
- Average: gamma = 1 + 4 f, T = tau^gamma; S <- S T/(T+1) + T reach sigma.
"""

from __future__ import annotations

import numpy as np

from csro.solvers.cfr._hooks import (
    PolicyAccumulator,
    PolicyFromRegretAccumulator,
    RegretAccumulator,
    Variant,
    normalize_rows,
)

SCHEDULE = 500.0
EPS = 1e-9
SCALE_PP, SCALE_PN, SCALE_NP, SCALE_NN = 1.1, 0.9, 0.7, 1.2
EMA_RATE, TREND = 0.1, 0.5


def _progress(t: int) -> float:
    return min(1.0, t / SCHEDULE)


def _disc(tau: float, exponent: float) -> float:
    x = tau**exponent
    return x / (x + 1.0)


class AODRegret(RegretAccumulator):
    """Scheduled asymmetric discounting with sign-pattern scaling of r."""

    def update_accumulate_regret(self, block, t, regrets):
        f = _progress(t)
        tau = float(t + 1)
        old = block.cumulative_regret
        r_pos, r_neg = regrets > EPS, regrets < -EPS
        scale = np.ones_like(old)
        pos, neg = old > EPS, old < -EPS
        scale[pos & r_pos] = SCALE_PP
        scale[pos & r_neg] = SCALE_PN
        scale[neg & r_pos] = SCALE_NP
        scale[neg & r_neg] = SCALE_NN
        d = np.where(old > 0, _disc(tau, 1.0 + 1.5 * f), _disc(tau, 0.5 - 0.5 * f))
        return old * d + regrets * scale


class AODPolicy(PolicyFromRegretAccumulator):
    """Regret matching on R plus half its deviation from its EMA, squared."""

    def __init__(self):
        self.ema: dict[int, np.ndarray] = {}

    def get_updated_current_policy(self, block, t, regrets, previous_policy):
        cum = block.cumulative_regret
        ema = self.ema.get(block.player)
        if ema is None:
            ema = np.zeros_like(cum)
        x = cum + TREND * (cum - ema)
        policy = normalize_rows(np.maximum(0.0, x) ** 2, block.legal, threshold=1e-12)
        self.ema[block.player] = EMA_RATE * cum + (1.0 - EMA_RATE) * ema
        return policy


class AODAverage(PolicyAccumulator):
    """Self-discounting polynomial average with a scheduled exponent."""

    def update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach):
        big_t = float(t + 1) ** (1.0 + 4.0 * _progress(t))
        factor = big_t / (big_t + 1.0)
        return block.cumulative_policy * factor + (big_t * reach)[:, None] * policy


def aod_cfr(horizon: int) -> Variant:
    """AOD-CFR (``horizon`` unused)."""
    return Variant("aod-cfr", AODRegret(), AODPolicy(), AODAverage())
