"""HS-PCFR+(30): PCFR+ with a hyperparameter schedule on the averaging exponent (Zhang,
McAleer, Sandholm, "Faster Game Solving via Hyperparameter Schedules", arXiv 2404.09097).

PCFR+ regrets and predictive policy (see ``pcfr_plus``); the average discounts the past by
``((tau-1)/tau)^gamma_t`` each iteration with the schedule ``gamma_t = 30 - 5 t / K`` over the
horizon of K iterations (gamma is PCFR+'s only hyperparameter, so it is the one scheduled).

Our interpretation: the paper was not at hand; the schedule (a linear decrease from gamma_0
= 30 by 5 over the horizon) is read from a public implementation of its eq. (4). With a
short horizon the high gamma makes the average almost the last iterates.
"""

from csro.solvers.cfr._blocks import DiscountedAverage, FlooredSumRegret, PredictivePolicy
from csro.solvers.cfr._hooks import Variant

GAMMA0 = 30.0
GAMMA_DROP = 5.0


def hs_pcfr_plus(horizon: int) -> Variant:
    """HS-PCFR+(30) for a run of ``horizon`` iterations."""
    k = max(int(horizon), 1)
    return Variant(
        "hs-pcfr+",
        FlooredSumRegret(),
        PredictivePolicy(),
        DiscountedAverage(lambda t: GAMMA0 - GAMMA_DROP * t / k),
    )
