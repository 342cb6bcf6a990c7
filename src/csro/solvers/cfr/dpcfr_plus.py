"""Discounted Predictive CFR+ (PDCFR+; Xu, Li, Fu, Fu, Huang, "Minimizing Weighted
Counterfactual Regret with Optimistic Online Mirror Descent", IJCAI 2024, arXiv 2404.13891).

With tau = t + 1 and ``d(x) = x^alpha / (x^alpha + 1)``: ``R <- max(d(tau-1) R + r, 0)``;
``sigma ∝ [d(tau) R + r]^+``; ``S <- S * ((tau-1)/tau)^gamma + reach * sigma``. Parameters
alpha = 2.3, gamma = 5, the values the AlphaEvolve paper (arXiv 2602.16928) compares against.
"""

from csro.solvers.cfr._blocks import DiscountedAverage, DiscountedFlooredRegret, PredictivePolicy
from csro.solvers.cfr._hooks import Variant

ALPHA = 2.3
GAMMA = 5.0


def dpcfr_plus(horizon: int) -> Variant:
    """DPCFR+(alpha=2.3, gamma=5) (``horizon`` unused)."""
    return Variant("dpcfr+", DiscountedFlooredRegret(ALPHA), PredictivePolicy(ALPHA),
                   DiscountedAverage(GAMMA))
