"""The named CFR variants: ``ALGORITHMS[name](horizon) -> Variant``."""

from __future__ import annotations

from typing import Callable

from csro.errors import ConfigError
from csro.solvers.cfr._hooks import Variant
from csro.solvers.cfr.aod_cfr import aod_cfr
from csro.solvers.cfr.cfr_plus import cfr_plus
from csro.solvers.cfr.dcfr import dcfr
from csro.solvers.cfr.dpcfr_plus import dpcfr_plus
from csro.solvers.cfr.hs_pcfr_plus import hs_pcfr_plus
from csro.solvers.cfr.lcfr import lcfr
from csro.solvers.cfr.pcfr_plus import pcfr_plus
from csro.solvers.cfr.vad_cfr import vad_cfr
from csro.solvers.cfr.vanilla import cfr
from csro.solvers.cfr.wop_cfr import wop_cfr

__all__ = ["ALGORITHMS", "make_variant"]

#: Every factory takes the run's horizon (total iterations K) and returns fresh hooks.
ALGORITHMS: dict[str, Callable[[int], Variant]] = {
    "cfr": cfr,
    "cfr+": cfr_plus,
    "lcfr": lcfr,
    "dcfr": dcfr,
    "pcfr+": pcfr_plus,
    "dpcfr+": dpcfr_plus,
    "hs-pcfr+": hs_pcfr_plus,
    "vad-cfr": vad_cfr,
    "aod-cfr": aod_cfr,
    "wop-cfr": wop_cfr,
}


def make_variant(name: str, horizon: int) -> Variant:
    """Fresh hooks of the named variant for a run of ``horizon`` iterations.

    Raises ConfigError (listing the valid names) for an unknown name.
    """
    try:
        factory = ALGORITHMS[name]
    except (KeyError, TypeError):
        valid = ", ".join(ALGORITHMS)
        raise ConfigError(f"unknown CFR algorithm {name!r}; valid: {valid}") from None
    return factory(horizon)
