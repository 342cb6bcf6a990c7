"""Hook building blocks shared by the classical variants (each variant file composes them).

Notation: t is the 0-based iteration, tau = t + 1, R the cumulative regret, r the
instantaneous regret, S the cumulative policy, sigma the policy of this iteration.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from csro.solvers.cfr._hooks import (
    PolicyAccumulator,
    PolicyFromRegretAccumulator,
    RegretAccumulator,
    regret_matching,
)

__all__ = [
    "SumRegret",
    "FlooredSumRegret",
    "DiscountedRegret",
    "DiscountedFlooredRegret",
    "RegretMatchingPolicy",
    "PredictivePolicy",
    "PolynomialAverage",
    "DiscountedAverage",
    "discount",
]


def discount(tau: float, exponent: float) -> float:
    """``tau^e / (tau^e + 1)``, the DCFR discount factor (0 at tau = 0 for e > 0)."""
    if tau <= 0:
        return 0.0
    x = float(tau) ** exponent
    return x / (x + 1.0)


class SumRegret(RegretAccumulator):
    """``R <- R + r`` (CFR, Zinkevich et al. 2007)."""

    def update_accumulate_regret(self, block, t, regrets):
        return block.cumulative_regret + regrets


class FlooredSumRegret(RegretAccumulator):
    """``R <- max(R + r, 0)`` (regret matching+, Tammelin 2014)."""

    def update_accumulate_regret(self, block, t, regrets):
        return np.maximum(block.cumulative_regret + regrets, 0.0)


class DiscountedRegret(RegretAccumulator):
    """``R <- R + r``, then ``R *= tau^a/(tau^a+1)`` where R >= 0, ``tau^b/(tau^b+1)``
    elsewhere (DCFR, Brown & Sandholm 2019, in OpenSpiel's ``DCFRSolver`` order)."""

    def __init__(self, alpha: float, beta: float):
        self.alpha, self.beta = alpha, beta

    def update_accumulate_regret(self, block, t, regrets):
        r = block.cumulative_regret + regrets
        tau = t + 1
        return r * np.where(r >= 0, discount(tau, self.alpha), discount(tau, self.beta))


class DiscountedFlooredRegret(RegretAccumulator):
    """``R <- max(d R + r, 0)`` with ``d = (tau-1)^a / ((tau-1)^a + 1)`` (PDCFR+, Xu et al. 2024)."""

    def __init__(self, alpha: float):
        self.alpha = alpha

    def update_accumulate_regret(self, block, t, regrets):
        d = discount(t, self.alpha)  # (tau - 1) = t
        return np.maximum(d * block.cumulative_regret + regrets, 0.0)


class RegretMatchingPolicy(PolicyFromRegretAccumulator):
    """``sigma ∝ [R]^+`` (regret matching; uniform when no regret is positive)."""

    def get_updated_current_policy(self, block, t, regrets, previous_policy):
        return regret_matching(block.cumulative_regret, block.legal)


class PredictivePolicy(PolicyFromRegretAccumulator):
    """``sigma ∝ [d R + r]^+``: the last instantaneous regret is the prediction of the next
    (PCFR+, Farina et al. 2021). ``alpha=None`` gives d = 1; otherwise
    ``d = tau^a / (tau^a + 1)`` (PDCFR+'s next-iteration discount)."""

    def __init__(self, alpha: float | None = None):
        self.alpha = alpha

    def get_updated_current_policy(self, block, t, regrets, previous_policy):
        d = 1.0 if self.alpha is None else discount(t + 1, self.alpha)
        return regret_matching(d * block.cumulative_regret + regrets, block.legal)


class PolynomialAverage(PolicyAccumulator):
    """``S <- S + tau^gamma * reach * sigma`` for ``t >= start`` (nothing before ``start``).

    gamma 0 is CFR's uniform average, 1 CFR+'s linear, 2 PCFR+'s quadratic, DCFR's gamma.
    """

    def __init__(self, gamma: float, start: int = 0):
        self.gamma, self.start = gamma, start

    def update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach):
        if t < self.start:
            return block.cumulative_policy
        weight = 1.0 if self.gamma == 0 else float(t + 1) ** self.gamma
        return block.cumulative_policy + (weight * reach)[:, None] * policy


class DiscountedAverage(PolicyAccumulator):
    """``S <- S * ((tau-1)/tau)^gamma_t + reach * sigma`` (PDCFR+ / hyperparameter
    schedules); ``gamma`` is a constant or a function of t."""

    def __init__(self, gamma: float | Callable[[int], float]):
        self.gamma = gamma

    def update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach):
        gamma = self.gamma(t) if callable(self.gamma) else self.gamma
        tau = t + 1
        factor = ((tau - 1) / tau) ** gamma
        return block.cumulative_policy * factor + reach[:, None] * policy
