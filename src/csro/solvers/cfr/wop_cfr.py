"""WOP-CFR, "Warm-started Optimistic Predictive CFR": the distilled core named in v3 of Li,
Schultz, Hennes, Lanctot, "Discovering Multiagent Learning Algorithms with Large Language
Models" (arXiv 2602.16928).

Our interpretation (v3's exact rules were not reachable; see docs/solvers.md): predictive
regret matching+ exactly as PCFR+ (``R <- max(R + r, 0)``, ``sigma ∝ [R + r]^+``), and a hard
warm start of the average taken from VAD-CFR: nothing is accumulated for the first half of the
horizon, ``t < K // 2``; afterwards PCFR+'s quadratic weights ``S <- S + tau^2 reach sigma``.
If the run stops before K // 2 the average is uniform (as VAD-CFR's before iteration 500).
"""

from csro.solvers.cfr._blocks import FlooredSumRegret, PolynomialAverage, PredictivePolicy
from csro.solvers.cfr._hooks import Variant


def wop_cfr(horizon: int) -> Variant:
    """WOP-CFR for a run of ``horizon`` iterations (averaging starts at ``horizon // 2``)."""
    return Variant("wop-cfr", FlooredSumRegret(), PredictivePolicy(),
                   PolynomialAverage(2, start=max(int(horizon), 0) // 2))
