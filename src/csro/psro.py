"""The CSRO loop: PSRO whose best-response oracle writes policies as code.

Algorithm 1 of Hennes et al., "Code-Space Response Oracles" (arXiv 2603.10098), for
symmetric two-player zero-sum games, which share one population::

    P = {initial policy};  U = payoffs within P;  sigma_0 = meta-solve(U)
    for k in 1..K:
        pi_k  = oracle(rules, API, opponents(sigma_{k-1}, P))     # the LLM team
        P     = P + {pi_k}        (only if pi_k is a valid program; else P stands)
        U     = U + the new row/column only                         (simulated)
        sigma_k = meta-solve(U)
    return P, sigma_K

Our reading where the paper is silent: ``sigma_k`` is the meta-strategy *after* iteration
k (``sigma_0`` over the initial policy alone), so the status and report show one sigma per
iteration and the final one is ``sigma_K``. The diagonal of U is 0 (a policy against
itself in a symmetric zero-sum game, seats alternated) and is not simulated; U[j, i] =
-U[i, j] comes from the same matches. A program identical to a member (same SHA-256) is
not added twice.

Populations are kept per player (``populations[player]``) so that n-player and general-sum
games can use one population per player later; today the loop refuses games that are not
two-player zero-sum, which all use ``populations[0]``.

Everything is written to the run store when produced; a resumed run re-walks the
iterations with the store as its cache (stored matches are not replayed, recorded LLM
calls are served from the store, finished iterations are not re-run), so it ends where an
uninterrupted run would.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np
import pyspiel

from csro import events
from csro.arena import Arena, Opponent, Target
from csro.config import RunConfig
from csro.errors import ConfigError
from csro.evaluation import PolicySpec, code_policy, resolve
from csro.games import CodeGame
from csro.llm import Completer, LLMSession
from csro.metagame import EmpiricalGame, support_changes
from csro.oracles import Oracle, OracleContext
from csro.seeding import derive_seed
from csro.simulate import StoredSimulator
from csro.solvers.meta import get_meta_solver, meta_nash_conv, symmetric_sigma
from csro.store import PolicyRecord, RunStore, SigmaRecord

EventFn = Callable[[int, str, dict], None]  # (iteration, kind, data)


def policy_spec(record: PolicyRecord, game: CodeGame) -> PolicySpec:
    """A playable spec named by the record's id (built-ins keep their trusted implementation)."""
    if record.source is not None:
        return code_policy(record.id, record.source, game)
    return dataclasses.replace(resolve(record.ref, game), name=record.id)


def check_game(game: CodeGame) -> None:
    """Refuse games the symmetric loop cannot handle, naming why."""
    utility = game.openspiel_game.get_type().utility
    zero_sum = utility in (pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM)
    if game.num_players != 2 or not zero_sum:
        raise ConfigError(
            f"game {game.name!r}: the CSRO loop supports two-player zero-sum games for now "
            f"({game.num_players} players, {utility.name.lower()} utility)")


class CSRO:
    """One CSRO run over a store. ``run()`` is Algorithm 1; resumable at any point.

    Args:
      config: the run configuration.
      game: the game.
      store: the run store (the truth of the run).
      simulator: plays the population's own payoff cells (the empirical game).
      llm: the run's LLM client.
      oracle: the best-response oracle.
      arena: where the oracle's candidates are played.
      on_event: called with every event as it is recorded.
      on_iteration: called after each iteration with the population and sigma; its dict is
        added to the iteration's record (the per-iteration evaluation).
    """

    def __init__(self, config: RunConfig, game: CodeGame, store: RunStore, simulator: StoredSimulator, llm: Completer,
                 *, oracle: Oracle, arena: Arena, on_event: EventFn | None = None,
                 on_iteration: Callable[[int, list[PolicySpec], np.ndarray], dict] | None = None):
        check_game(game)
        self.config = config
        self.game = game
        self.store = store
        self.sim = simulator
        self.llm = llm
        self.oracle = oracle
        self.arena = arena
        self.meta_solver = get_meta_solver(config.meta_solver)  # one instance: stateful solvers see every iteration
        self.on_event = on_event
        self.on_iteration = on_iteration
        self.populations: list[list[PolicyRecord]] = [[]]

    # -- bookkeeping ------------------------------------------------------------------
    def log(self, iteration: int, kind: str, data: dict) -> None:
        self.store.add_event(iteration, kind, data)
        if self.on_event:
            self.on_event(iteration, kind, data)

    def _specs(self, player: int = 0) -> list[PolicySpec]:
        return [policy_spec(r, self.game) for r in self.populations[player]]

    def _add(self, record: PolicyRecord) -> None:
        self.store.add_policy(record)
        self.populations[record.player].append(record)

    # -- the steps of Algorithm 1 ---------------------------------------------------------
    def _initial(self) -> None:
        stored = self.store.policies(0)
        if stored:
            return
        ref = self.config.initial_policy
        spec = resolve(ref, self.game)
        self.store.add_policy(PolicyRecord(
            id="p0", player=0, iteration=0, oracle="initial", source=spec.source,
            ref=ref if spec.builtin else None, sha256=spec.sha256, parent=None))

    def _solve(self, iteration: int) -> np.ndarray:
        """Simulate the missing cells of U, solve the meta-game, store sigma_iteration."""
        specs = self._specs()
        newest = specs[-1]
        mg = self.config.meta_game
        self.sim.play_sized("meta", [(newest, old) for old in specs[:-1]], self.config.matches_per_cell,
                            ci_width=mg.ci_width, max_matches=mg.max_matches)
        names = [s.name for s in specs]
        game = self.empirical_game(names)
        sigma = symmetric_sigma(game.payoffs, self.meta_solver)
        s = 0.5 * (game.payoffs - game.payoffs.T)
        conv = float(meta_nash_conv([s, -s], [sigma, sigma]))
        fresh = not any(r.iteration == iteration for r in self.store.sigmas())
        self.store.add_sigma(SigmaRecord(iteration, 0, tuple(names), tuple(float(x) for x in sigma),
                                         self.config.meta_solver, conv))
        if fresh:
            data = {"sigma": dict(zip(names, map(float, sigma))), "meta_nash_conv": conv,
                    "u": game.payoffs.tolist(), "u_ci95": game.ci.tolist(), "u_matches": game.counts.tolist()}
            if mg.resamples:
                data["support_changes"] = support_changes(game, self.config.meta_solver, sigma, mg.resamples,
                                                          derive_seed(self.config.seed, "resample", iteration))
            self.log(iteration, events.SIGMA, data)
        return sigma

    def empirical_game(self, names: list[str]) -> EmpiricalGame:
        """U over the named members from the stored meta matches, with standard errors."""
        return EmpiricalGame.symmetric(self.store.payoff_table("meta"), names)

    def _context(self, iteration: int, sigma: np.ndarray) -> OracleContext:
        """What the oracle of ``iteration`` gets: sigma over the population, and the rest."""
        target = Target(iteration, 0, tuple(
            Opponent(spec.name, float(w), spec, spec.builtin.description if spec.builtin else "")
            for spec, w in zip(self._specs(), sigma)))
        return OracleContext(
            game=self.game, target=target,
            llm=LLMSession(self.llm, iteration, self.config.llm.temperature, self.config.seed),
            arena=self.arena, config=self.config.oracle,
            log=StoreLog(self.store, iteration, 0, lambda kind, data: self.log(iteration, kind, data)))

    def _best_response(self, iteration: int, sigma: np.ndarray) -> None:
        """Call the oracle against sigma_{k-1}; add its program if it is valid and new."""
        result = self.oracle.best_response(self._context(iteration, sigma))
        if result.source is None:
            self.log(iteration, events.ORACLE_FAILED, {"reason": result.reason, "attempts": len(result.attempts)})
            return
        spec = code_policy("new", result.source, self.game)
        duplicate = next((r.id for r in self.populations[0] if r.sha256 == spec.sha256), None)
        if duplicate:
            self.log(iteration, events.DUPLICATE, {"of": duplicate, "reason": result.reason})
            return
        fb = result.feedback
        self._add(PolicyRecord(
            id=f"p{len(self.populations[0])}", player=0, iteration=iteration, oracle=self.oracle.name,
            source=result.source, ref=None, sha256=spec.sha256, parent=None,
            call_keys=tuple(result.call_keys),
            info={"utility": fb.utility if fb else None, "per_opponent": fb.per_opponent if fb else {},
                  "reason": result.reason, "attempts": [dataclasses.asdict(a) for a in result.attempts]}))

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> tuple[list[PolicyRecord], np.ndarray]:
        """Run (or continue) the K iterations; returns the population and sigma_K."""
        self._initial()
        stored = self.store.policies(0)
        done = {d["iteration"] for d in self.store.iterations()}
        self.populations = [[r for r in stored if r.iteration == 0]]
        sigma = self._solve(0)
        if 0 not in done:
            self._finish_iteration(0, sigma, time.monotonic())
        for k in range(1, self.config.iterations + 1):
            started = time.monotonic()
            if k in done:
                self.populations[0].extend(r for r in stored if r.iteration == k)
            else:
                self.log(k, events.ITERATION_START, {"population": len(self.populations[0])})
                recorded = [r for r in stored if r.iteration == k]
                if recorded:  # the policy was stored before a crash ended the iteration
                    self.populations[0].extend(recorded)
                else:
                    self._best_response(k, sigma)
            sigma = self._solve(k)
            if k not in done:
                self._finish_iteration(k, sigma, started)
        return self.populations[0], sigma

    def exploitability_estimate(self, sigma: np.ndarray) -> dict:
        """One more best response, against sigma_K (iteration K + 1; not added to the population).

        In a symmetric zero-sum game sigma_K's exploitability is max over policies pi of
        u(pi, sigma_K), since u(sigma_K, sigma_K) = 0; the utility of any program against sigma_K
        is a lower bound on it, and the oracle's best answer is the tightest one it can find
        *within code space*. Its 95% interval comes from the matches behind it. Our addition
        (the paper gives no exploitability for RRPS or Leduc); exact NashConv stays where the
        game is small enough (``csro.scoring``).
        """
        k = self.config.iterations + 1
        result = self.oracle.best_response(self._context(k, sigma))
        fb = result.feedback
        data = {"iteration": k, "utility": fb.utility if fb else None, "ci95": fb.ci95 if fb else None,
                "lower_bound": max(0.0, fb.utility) if fb else None, "matches": fb.matches if fb else 0,
                "sha256": code_policy("br", result.source, self.game).sha256 if result.source else None,
                "reason": result.reason}
        self.log(k, events.EXPLOITABILITY_ESTIMATE, data)
        return data

    def _finish_iteration(self, k: int, sigma: np.ndarray, started: float) -> None:
        data = {"population_size": len(self.populations[0])}
        newest = self.populations[0][-1]
        if newest.iteration == k and newest.info.get("utility") is not None:
            data["br_utility"] = newest.info["utility"]
        sigmas = self.store.sigmas()
        data["meta_nash_conv"] = next(s.meta_nash_conv for s in sigmas if s.iteration == k)
        if self.on_iteration:
            data.update(self.on_iteration(k, self._specs(), sigma))
        data["seconds"] = time.monotonic() - started
        self.store.mark_iteration(k, data)
        self.log(k, events.ITERATION_DONE, data)


@dataclasses.dataclass(frozen=True)
class StoreLog:
    """The run store as one best-response call may see it (``csro.oracles.OracleLog``).

    Attributes:
      store: the run store.
      iteration: the iteration events are recorded under.
      player: whose sigma ``support`` reads.
      record: records an event of that iteration (the loop's ``log``, which also tells the UI).
    """

    store: RunStore
    iteration: int
    player: int
    record: Callable[[str, dict], None]

    def event(self, kind: str, data: dict) -> None:
        self.record(kind, data)

    def add_program(self, data: dict, fitness: float | None) -> None:
        self.store.add_program(data, fitness)

    def programs(self, before_iteration: int) -> list[dict]:
        return self.store.programs(before_iteration=before_iteration)

    def support(self, iteration: int) -> dict[str, float]:
        sigma = next((s for s in self.store.sigmas() if s.iteration == iteration and s.player == self.player), None)
        return {} if sigma is None else {n: w for n, w in zip(sigma.names, sigma.sigma) if w > 0}
