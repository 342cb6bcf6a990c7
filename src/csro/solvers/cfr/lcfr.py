"""Linear CFR (Brown & Sandholm, AAAI 2019, arXiv 1809.04040): DCFR(1, 1, 1).

Iteration tau's regrets and policy are weighted by tau; implemented as the DCFR preset, which
is equivalent up to a per-iteration scale that regret matching ignores.
"""

from csro.solvers.cfr.dcfr import discounted_cfr
from csro.solvers.cfr._hooks import Variant


def lcfr(horizon: int) -> Variant:
    """LCFR = DCFR(1, 1, 1) (``horizon`` unused)."""
    return discounted_cfr(1.0, 1.0, 1.0, "lcfr")
