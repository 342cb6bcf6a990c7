"""α-Rank meta-solver (Omidshafiei et al. 2019, "α-Rank: Multi-Agent Evaluation by
Evolution", Scientific Reports 9:9937, arXiv 1903.01373), via OpenSpiel's
``open_spiel.python.egt.alpharank``.

The meta-game is treated as N populations (one per player), as OpenSpiel's ``psro_v2``
does for non-symmetric games. α-Rank returns a stationary distribution over *joint*
profiles; the sigma of player p is its marginal (the profile index is row-major over the
players, ``alpharank.utils.get_strat_profile_from_id``: the last player varies fastest).

Default (``alpha=None, epsilon=None``): the infinite-α limit with OpenSpiel's ε-sweep
(``alpharank.sweep_pi_vs_epsilon``), the setting of ``psro_v2``'s ``alpharank`` solver.
``epsilon`` = a number: one infinite-α ``alpharank.compute`` with that ranking noise
(the sweep runs at least 11 of these). ``alpha`` = a number: finite ranking intensity with
finite population size ``m``. α-Rank is not an equilibrium concept: its sigma need not be Nash.

Cost: OpenSpiel builds the Markov chain over all joint profiles (prod of population sizes)
with Python loops and takes a dense eigendecomposition. Measured on one shared core: RPS
0.8 s (sweep); a 30×30 Leduc PSRO meta-game (900 profiles) 9 s per ``compute``, 230 s with
the sweep; a 10×10×10 three-player Kuhn meta-game 106 s with the sweep. Use ``epsilon`` (or
another solver) for long PSRO runs.

OpenSpiel's ``egt.alpharank`` imports ``networkx`` (for its visualiser) at module level, so
``networkx`` must be installed; without it this solver raises ``ConfigError``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging

import numpy as np

from csro.errors import ConfigError
from csro.solvers.meta._base import MetaSolver

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class AlphaRankSolver(MetaSolver):
    """α-Rank marginals per player (see module docstring).

    Options:
        alpha: finite ranking intensity; ``None`` (default) = the infinite-α limit.
        epsilon: infinite-α ranking noise for a single computation; ``None`` (default) =
            OpenSpiel's ε-sweep. Only with ``alpha=None``.
        m: finite population size, used when ``alpha`` is a number (default 50).
    """

    name = "alpharank"
    alpha: float | None = None
    epsilon: float | None = None
    m: int = 50

    def __post_init__(self) -> None:
        if self.alpha is not None and not self.alpha > 0:
            raise ConfigError(f"alpharank: alpha must be > 0 or None, got {self.alpha}")
        if self.epsilon is not None and not 0 < self.epsilon < 1:
            raise ConfigError(f"alpharank: epsilon must be in (0, 1) or None, got {self.epsilon}")
        if self.epsilon is not None and self.alpha is not None:
            raise ConfigError("alpharank: give alpha (finite) or epsilon (infinite alpha), not both")
        if self.m < 2:
            raise ConfigError(f"alpharank: m must be >= 2, got {self.m}")

    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        try:
            from open_spiel.python.egt import alpharank
        except ImportError as exc:  # OpenSpiel's alpharank imports networkx at module level
            raise ConfigError(
                f"alpharank needs OpenSpiel's egt.alpharank, which failed to import ({exc}); "
                "install networkx"
            ) from None

        shape = tensors[0].shape
        if len(tensors) == 1:
            return [np.eye(shape[0])[int(np.argmax(tensors[0]))]]
        # OpenSpiel prints diagnostics during the sweep; keep them in our log instead.
        noise = io.StringIO()
        try:
            with contextlib.redirect_stdout(noise), np.errstate(over="ignore", invalid="ignore"):
                if self.alpha is not None:
                    _, _, pi, _, _ = alpharank.compute(list(tensors), m=self.m, alpha=self.alpha)
                elif self.epsilon is not None:
                    _, _, pi, _, _ = alpharank.compute(list(tensors), use_inf_alpha=True,
                                                       inf_alpha_eps=self.epsilon)
                else:
                    pi = alpharank.sweep_pi_vs_epsilon(list(tensors))
        except (ValueError, RuntimeError) as exc:  # overflow at large alpha, failed sweep
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ConfigError(f"alpharank failed on a {shape} meta-game ({first}); try a smaller "
                              "alpha, or epsilon, or another meta-solver") from None
        if noise.getvalue():
            logger.debug("alpharank: %s", noise.getvalue().strip())
        joint = np.maximum(np.asarray(pi, dtype=np.float64), 0.0).reshape(shape)
        return [
            joint.sum(axis=tuple(q for q in range(len(shape)) if q != p))
            for p in range(len(shape))
        ]
