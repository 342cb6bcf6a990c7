"""Predictive CFR+ (Farina, Kroer, Sandholm, "Faster Game Solving via Predictive Blackwell
Approachability: Connecting Regret Matching and Mirror Descent", AAAI 2021, arXiv 2007.14358).

Hooks: ``R <- max(R + r, 0)``; ``sigma ∝ [R + r]^+`` (the prediction of the next
instantaneous regret is the last one); quadratic averaging ``S <- S + tau^2 * reach * sigma``.
"""

from csro.solvers.cfr._blocks import FlooredSumRegret, PolynomialAverage, PredictivePolicy
from csro.solvers.cfr._hooks import Variant


def pcfr_plus(horizon: int) -> Variant:
    """PCFR+ with quadratic averaging (``horizon`` unused)."""
    return Variant("pcfr+", FlooredSumRegret(), PredictivePolicy(), PolynomialAverage(2))
