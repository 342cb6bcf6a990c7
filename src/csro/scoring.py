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

With per-player populations (n players, general-sum, seats that differ) each player's sigma
is scored in its own seat against the game's evaluation population for that seat
(``CodeGame.seat_population``: each member fills every other seat): PopReturn is the mean
return of the seat, PopExpl the largest mean return of the other seats (what the evaluation
policy gains against the mixture), AggScore their difference, welfare the mean sum of all
seats' returns; the run's summary figures are the means over seats, and the final profile's
exact NashConv is added where the game is small (``exact_exploitability_profile``).

Where the game is too large for exact NashConv, ``exploitability_estimate`` bounds sigma_K's
exploitability from below by one more best response (``evaluation.br_estimate``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from csro.config import EvaluationConfig
from csro.errors import GameError
from csro.evaluation.exploitability import ExploitabilityError, exact_exploitability, exact_exploitability_profile
from csro.evaluation.metrics import population_score
from csro.evaluation.payoff_table import Mixture
from csro.evaluation.policy_ref import PolicySpec, code_policy, resolve
from csro.games import CodeGame
from csro.metagame import Solution
from csro.oracles import OracleResult
from csro.simulate import StoredSimulator

SUMMARY_KEYS = ("pop_return", "pop_expl", "agg_score", "ci95")


class Scorer:
    """Plays and scores sigma-mixtures of a population against the evaluation population."""

    def __init__(self, game: CodeGame, simulator: StoredSimulator, config: EvaluationConfig):
        self.game = game
        self.sim = simulator
        self.config = config
        refs = game.evaluation_refs(config.population)
        self.opponents = [resolve(ref, game) for ref in refs]

    def score(self, members: Sequence[PolicySpec], sigma: np.ndarray) -> dict:
        """The metrics of the mixture ``sigma`` over ``members`` (``PopulationScore.to_dict``)."""
        support = [(m, float(w)) for m, w in zip(members, sigma) if w > 0]
        table = self.sim.play("eval", [(m, o) for m, _ in support for o in self.opponents],
                              self.config.matches_per_opponent)
        mixture = Mixture.of([m.name for m, _ in support], [w for _, w in support])
        return population_score(table, mixture, [o.name for o in self.opponents], name="sigma").to_dict()

    def score_seat(self, seat: int, members: Sequence[PolicySpec], sigma: np.ndarray) -> dict:
        """The metrics of player ``seat``'s mixture in its own seat (see the module docstring)."""
        population = self.config.population
        refs = self.game.seat_population(seat) if population == "default" else self.game.evaluation_refs(population)
        opponents = [resolve(ref, self.game) for ref in refs]
        support = [(m, float(w)) for m, w in zip(members, sigma) if w > 0]
        n = self.game.num_players
        profiles = [tuple(m if s == seat else o for s in range(n)) for m, _ in support for o in opponents]
        results = iter(self.sim.profile_results("eval", profiles, self.config.matches_per_opponent))
        mine, theirs, welfare = {o.name: 0.0 for o in opponents}, {o.name: 0.0 for o in opponents}, 0.0
        for _, w in support:
            for o in opponents:
                rs = next(results)
                mine[o.name] += w * float(np.mean([r.returns[seat] for r in rs]))
                theirs[o.name] += w * float(np.mean([np.mean([x for s, x in enumerate(r.returns) if s != seat])
                                                     for r in rs]))
                welfare += w * float(np.mean([sum(r.returns) for r in rs])) / len(opponents)
        pop_return = float(np.mean(list(mine.values())))
        worst = max(theirs, key=theirs.get)
        return {"seat": seat, "pop_return": pop_return, "pop_expl": theirs[worst], "agg_score": pop_return - theirs[worst],
                "welfare": welfare, "worst_opponent": worst, "per_opponent": mine, "ci95": None}

    def _seats(self, members: list[list[PolicySpec]], sigmas: list[np.ndarray]) -> dict:
        seats = [self.score_seat(p, members[p], sigmas[p]) for p in range(len(members))]
        means = {key: float(np.mean([s[key] for s in seats])) for key in ("pop_return", "pop_expl", "agg_score", "welfare")}
        return {**means, "ci95": None, "seats": seats}

    def per_iteration(self, iteration: int, members: list[list[PolicySpec]], sigmas: list[np.ndarray]) -> dict:
        """The loop's ``on_iteration`` hook: the summary metrics of sigma_iteration (one
        population and sigma in a symmetric game, one per player otherwise)."""
        out: dict = {}
        if self.config.nash_conv_every_iteration:
            out["nash_conv"], _ = self._nash_conv(members, sigmas)
        if not self.config.every_iteration:
            return out
        if len(members) > 1:
            return {**out, **self._seats(members, sigmas)}
        scored = self.score(members[0], sigmas[0])
        return {**out, **{key: scored[key] for key in SUMMARY_KEYS}}

    def final(self, members: list[list[PolicySpec]], sigmas: list[np.ndarray]) -> dict:
        """The final evaluation stored with the run (``RunStore.set_final``)."""
        if len(members) > 1:
            out = self._seats(members, sigmas)
            out["population"] = [[m.name for m in ms] for ms in members]
            out["sigma"] = [{m.name: float(w) for m, w in zip(ms, s)} for ms, s in zip(members, sigmas)]
        else:
            out = self.score(members[0], sigmas[0])
            out["population"] = [m.name for m in members[0]]
            out["sigma"] = {m.name: float(w) for m, w in zip(members[0], sigmas[0])}
        out["matches_per_opponent"] = self.config.matches_per_opponent
        out["nash_conv"], out["nash_conv_note"] = self._nash_conv(members, sigmas)
        return out

    def _nash_conv(self, members: list[list[PolicySpec]], sigmas: list[np.ndarray]) -> tuple[float | None, str | None]:
        if not self.config.exact_nash_conv:
            return None, "not requested (evaluation.exact_nash_conv is false)"
        try:
            if len(members) > 1:
                result = exact_exploitability_profile(self.game, list(zip(members, sigmas)))
            else:
                result = exact_exploitability(self.game, members[0], sigmas[0])
        except (GameError, ExploitabilityError) as exc:
            return None, f"not computed: {exc}"
        note = None if result.exact else f"estimated: a member is stochastic ({result.samples} samples per state)"
        return result.nash_conv, note


def exploitability_estimate(game: CodeGame, solution: Solution, results: Sequence[OracleResult]) -> dict:
    """sigma_K's exploitability bounded from below by one more best response per population
    (``results``, the oracle's answers to ``solution`` at iteration K + 1; not added to any
    population); the ``exploitability_estimate`` event and the final record's ``expl_estimate``.

    In a symmetric zero-sum game sigma_K's exploitability is max over policies pi of
    u(pi, sigma_K), since u(sigma_K, sigma_K) = 0; the utility of any program against sigma_K
    is a lower bound on it, and the oracle's best answer is the tightest one it can find
    *within code space*. Its 95% interval comes from the matches behind it. Our addition
    (the paper gives no exploitability for RRPS or Leduc); exact NashConv stays where the
    game is small enough (``Scorer.final``). With per-player populations, one best response
    per player; the estimate is their sum minus sigma_K's own values (a NashConv bound).
    """
    fbs = [r.feedback for r in results]
    sha256 = [code_policy("br", r.source, game).sha256 if r.source else None for r in results]
    data = {"iteration": solution.iteration + 1, "reason": "; ".join(r.reason for r in results),
            "utility": None, "ci95": None, "lower_bound": None, "matches": sum(fb.matches for fb in fbs if fb),
            "sha256": sha256[0] if len(results) == 1 else sha256}
    if all(fbs):
        gain = sum(fb.utility - v for fb, v in zip(fbs, solution.values))
        data.update(utility=gain, ci95=float(np.sqrt(sum(fb.ci95 ** 2 for fb in fbs))), lower_bound=max(0.0, gain))
    return data
