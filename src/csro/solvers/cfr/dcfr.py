"""Discounted CFR (Brown & Sandholm, "Solving Imperfect-Information Games via Discounted Regret
Minimization", AAAI 2019, arXiv 1809.04040).

DCFR(alpha, beta, gamma) on iteration tau = t + 1: add r, then multiply positive cumulative
regrets by ``tau^alpha/(tau^alpha+1)`` and the others by ``tau^beta/(tau^beta+1)``; regret
matching; weight the iteration's policy by ``tau^gamma`` in the average. The default is the
paper's recommended DCFR(1.5, 0, 2). The discount is applied after adding r, in the order of
OpenSpiel's ``DCFRSolver`` (tests check equality with it).
"""

from csro.solvers.cfr._blocks import DiscountedRegret, PolynomialAverage, RegretMatchingPolicy
from csro.solvers.cfr._hooks import Variant


def discounted_cfr(alpha: float, beta: float, gamma: float, name: str) -> Variant:
    """DCFR with explicit parameters."""
    return Variant(name, DiscountedRegret(alpha, beta), RegretMatchingPolicy(),
                   PolynomialAverage(gamma))


def dcfr(horizon: int) -> Variant:
    """DCFR(1.5, 0, 2) (``horizon`` unused)."""
    return discounted_cfr(1.5, 0.0, 2.0, "dcfr")
