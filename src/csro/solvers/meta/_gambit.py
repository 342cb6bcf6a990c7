"""Nash equilibria of N-player general-sum meta-games via Gambit (``pygambit``).

Gambit (McKelvey, McLennan, Turocy, "Gambit: Software Tools for Game Theory", pygambit
17.0.0b2 on PyPI, the first release with a wheel for CPython 3.11, see docs/llm.md) is the
maintained library of equilibrium algorithms for normal-form games of
any number of players; our own ``nash`` solver is exact only for two players. Methods
(option ``method``):

- ``logit`` (default): follows the principal branch of the logit quantal response
  equilibrium correspondence from the centroid (lambda = 0) to lambda -> infinity
  (McKelvey & Palfrey 1995; Turocy 2005). The branch is unique for generic games, so this is
  an equilibrium *selection* (the limiting logit equilibrium), not just some equilibrium.
  It stops when the profile's maximum regret is at most ``maxregret``; pygambit measures
  regret relative to the game's payoff range, so the meta NashConv of the answer is of that
  order (measured on random normal 5x5x5 and 10x10x10 games: about 1e-7 with the default
  1e-8; much smaller values can make the path following crawl for minutes).
- ``gnm``: the global Newton method of Govindan & Wilson (2003), exact to round-off when it
  converges, but it can fail to return any equilibrium (seen on a random 8x8x8 game); then
  the solver falls back to ``logit``. A ``logit`` trace that ends without an accepted
  equilibrium (pygambit's ``LogitResult.success`` false) raises ``RuntimeError`` naming its
  reason.

The answer is checked with our own ``meta_nash_conv``: above ``nash_conv_tol`` times the
payoff range it raises ``RuntimeError`` rather than pass a non-equilibrium on.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from csro.errors import ConfigError
from csro.solvers.meta._base import MetaSolver, meta_nash_conv

logger = logging.getLogger(__name__)

METHODS = ("logit", "gnm")


def _pygambit():
    try:
        import pygambit
    except ImportError as exc:
        raise ConfigError(f"the gambit meta-solver needs pygambit ({exc}); pip install pygambit==17.0.0b2") from None
    return pygambit


def _profile(equilibrium) -> list[np.ndarray]:
    """A pygambit mixed profile as one probability vector per player, in the game's order.

    pygambit 17 iterates a profile as one ``MixedStrategy`` per player and a mixed strategy
    as ``(strategy label, probability)`` pairs, both in the order ``from_arrays`` made them.
    """
    return [np.array([float(p) for _, p in mixed]) for mixed in equilibrium]


@dataclasses.dataclass(frozen=True)
class GambitNashSolver(MetaSolver):
    """Nash equilibrium of any N-player game via pygambit (see module docstring).

    Options:
        method: ``logit`` (default) or ``gnm``.
        maxregret: ``logit``'s stopping regret, relative to the payoff range (1e-8, Gambit's default).
        nash_conv_tol: the answer's meta NashConv must be at most this times the payoff
            range (default 1e-6).
    """

    name = "gambit"
    method: str = "logit"
    maxregret: float = 1e-8
    nash_conv_tol: float = 1e-6

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"gambit: method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if not 0 < self.maxregret < 1:
            raise ConfigError(f"gambit: maxregret must be in (0, 1), got {self.maxregret}")
        if not self.nash_conv_tol > 0:
            raise ConfigError(f"gambit: nash_conv_tol must be > 0, got {self.nash_conv_tol}")

    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        if len(tensors) == 1:
            return [np.eye(len(tensors[0]))[int(np.argmax(tensors[0]))]]
        gbt = _pygambit()
        game = gbt.StrategicGame.from_arrays(*tensors)
        sigmas = None
        if self.method == "gnm":
            found = gbt.nash.gnm_solve(game).equilibria
            if found:
                sigmas = _profile(found[0])
            else:
                logger.warning("gambit: gnm found no equilibrium of a %s game; using logit", tensors[0].shape)
        if sigmas is None:
            traced = gbt.nash.logit_solve(game, maxregret=self.maxregret)
            if traced.equilibrium is None:
                raise RuntimeError(f"gambit (logit) found no equilibrium of a {tensors[0].shape} game: "
                                   f"{traced.reason.name}")
            sigmas = _profile(traced.equilibrium)
        spread = max(float(np.ptp(t)) for t in tensors)
        gap = meta_nash_conv(tensors, sigmas)
        if gap > self.nash_conv_tol * max(spread, 1e-12):
            raise RuntimeError(f"gambit ({self.method}) answer has NashConv {gap:.3g} on a "
                               f"{tensors[0].shape} game")
        return sigmas
