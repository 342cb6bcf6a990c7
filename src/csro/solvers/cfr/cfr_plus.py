"""CFR+ (Tammelin, "Solving Large Imperfect Information Games Using CFR+", arXiv 1407.5042, 2014).

Hooks: ``R <- max(R + r, 0)`` (regret matching+); ``sigma ∝ R``; ``S <- S + tau * reach *
sigma`` (linear averaging, tau = t + 1). With alternating updates this is OpenSpiel's
``CFRPlusSolver`` exactly (no averaging delay).
"""

from csro.solvers.cfr._blocks import FlooredSumRegret, PolynomialAverage, RegretMatchingPolicy
from csro.solvers.cfr._hooks import Variant


def cfr_plus(horizon: int) -> Variant:
    """CFR+ (``horizon`` unused)."""
    return Variant("cfr+", FlooredSumRegret(), RegretMatchingPolicy(), PolynomialAverage(1))
