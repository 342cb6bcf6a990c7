"""CFR: counterfactual regret minimization (Zinkevich, Johanson, Bowling, Piccione, NIPS 2007).

Hooks: ``R <- R + r``; ``sigma ∝ [R]^+`` (regret matching); ``S <- S + reach * sigma``
(uniform average). With alternating updates this is OpenSpiel's ``CFRSolver`` exactly.
"""

from csro.solvers.cfr._blocks import PolynomialAverage, RegretMatchingPolicy, SumRegret
from csro.solvers.cfr._hooks import Variant


def cfr(horizon: int) -> Variant:
    """Vanilla CFR (``horizon`` unused)."""
    return Variant("cfr", SumRegret(), RegretMatchingPolicy(), PolynomialAverage(0))
