"""Scoring a run's meta-strategy against the game's evaluation population.

Hennes et al. (arXiv 2603.10098) score the final sigma-mixture of a CSRO run by PopReturn,
PopExpl and AggScore against a fixed evaluation population (the 43 RoShamBo bots for RRPS;
the metrics of Lanctot et al., arXiv 2303.03196) and report no exact exploitability of the
mixture. We score sigma after every iteration too (``evaluation.every_iteration``), and for
small sequential games we add the mixture's exact NashConv (``csro.evaluation.exploitability``).

Our interpretation: the mixture plays as the sigma-weighted expectation of its members'
cells (``csro.evaluation.payoff_table``), so only members in sigma's support are played
against the evaluation population, each for ``evaluation.matches_per_opponent`` matches, in
the ``eval`` phase of the run store (a member is played once per run, whatever iteration
first needs it).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from csro.config import EvaluationConfig
from csro.errors import GameError
from csro.evaluation.exploitability import ExploitabilityError, exact_exploitability
from csro.evaluation.metrics import population_score
from csro.evaluation.payoff_table import Mixture
from csro.evaluation.policy_ref import PolicySpec, resolve
from csro.games import CodeGame
from csro.simulate import StoredSimulator

SUMMARY_KEYS = ("pop_return", "pop_expl", "agg_score", "ci95")


class Scorer:
    """Plays and scores sigma-mixtures of a population against the evaluation population."""

    def __init__(self, game: CodeGame, simulator: StoredSimulator, config: EvaluationConfig):
        self.game = game
        self.sim = simulator
        self.config = config
        refs = game.population() if config.population == "default" else list(config.population)
        self.opponents = [resolve(ref, game) for ref in refs]

    def score(self, members: Sequence[PolicySpec], sigma: np.ndarray) -> dict:
        """The metrics of the mixture ``sigma`` over ``members`` (``PopulationScore.to_dict``)."""
        support = [(m, float(w)) for m, w in zip(members, sigma) if w > 0]
        table = self.sim.play("eval", [(m, o) for m, _ in support for o in self.opponents],
                              self.config.matches_per_opponent)
        mixture = Mixture.of([m.name for m, _ in support], [w for _, w in support])
        return population_score(table, mixture, [o.name for o in self.opponents], name="sigma").to_dict()

    def per_iteration(self, iteration: int, members: list[PolicySpec], sigma: np.ndarray) -> dict:
        """The loop's ``on_iteration`` hook: the summary metrics of sigma_iteration."""
        if not self.config.every_iteration:
            return {}
        scored = self.score(members, sigma)
        return {key: scored[key] for key in SUMMARY_KEYS}

    def final(self, members: list[PolicySpec], sigma: np.ndarray) -> dict:
        """The final evaluation stored with the run (``RunStore.set_final``)."""
        out = self.score(members, sigma)
        out["matches_per_opponent"] = self.config.matches_per_opponent
        out["population"] = [m.name for m in members]
        out["sigma"] = {m.name: float(w) for m, w in zip(members, sigma)}
        out["nash_conv"], out["nash_conv_note"] = self._nash_conv(members, sigma)
        return out

    def _nash_conv(self, members: list[PolicySpec], sigma: np.ndarray) -> tuple[float | None, str | None]:
        if not self.config.exact_nash_conv:
            return None, "not requested (evaluation.exact_nash_conv is false)"
        try:
            result = exact_exploitability(self.game, members, sigma)
        except (GameError, ExploitabilityError) as exc:
            return None, f"not computed: {exc}"
        note = None if result.exact else f"estimated: a member is stochastic ({result.samples} samples per state)"
        return result.nash_conv, note
