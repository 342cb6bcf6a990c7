"""The CSRO loop: PSRO whose best-response oracle writes policies as code.

Algorithm 1 of Hennes et al., "Code-Space Response Oracles" (arXiv 2603.10098), for
symmetric two-player zero-sum games, which share one population::

    P = {initial policy};  U = payoffs within P;  sigma_0 = meta-solve(U)
    for k in 1..K:
        pi_k  = oracle(rules, API, opponents(sigma_{k-1}, P))     # the LLM team
        P     = P + {pi_k}        (only if pi_k is a valid program; else P stands)
        U     = U + the new row/column only    (simulated; what the oracle measured is reused)
        sigma_k = meta-solve(U)
    return P, sigma_K

Our reading where the paper is silent: ``sigma_k`` is the meta-strategy *after* iteration
k (``sigma_0`` over the initial policy alone), so the status and report show one sigma per
iteration and the final one is ``sigma_K``. The diagonal of U is 0 (a policy against
itself in a symmetric zero-sum game, seats alternated) and is not simulated; U[j, i] =
-U[i, j] comes from the same matches. A program identical to a member (same SHA-256) is
not added twice.

The same loop for any other game — n players, general-sum, or seats that differ — keeps one
population per player (the paper: "the loop transfers to general-sum and n-player games with
per-player populations"; our reading, as OpenSpiel's ``psro_v2``)::

    P_p = {initial policy} for every player p;  U_p = payoffs of every profile
    for k in 1..K:
        for each player p:  pi_k^p = oracle(seat p's rules and API, sigma_{-p})   # one call each
        P_p = P_p + {pi_k^p};  U = U + the profiles with a new member only         (simulated)
        sigma_k = meta-solve(U_0, ..., U_{N-1})    # a product sigma, or a joint one (CE, CCE)

Both are the loop below; what differs — which cells are simulated, how sigma is solved and
what each player's oracle answers — is the meta-game's (``csro.metagame``: a
``SymmetricMetaGame`` or a ``ProfileMetaGame``, each ``solve(k, populations) -> Solution`` and
``target(solution, player) -> Target``). With per-player populations a call key carries the
seat (``seat1-propose``) and a policy is ``p1-3``.

Everything is written to the run store when produced; a resumed run re-walks the
iterations with the store as its cache (stored matches are not replayed, recorded LLM
calls are served from the store, finished iterations are not re-run), so it ends where an
uninterrupted run would. The same holds for a run stopped by its LLM budget
(``BudgetExhausted``, csro.llm.budget) or by a provider that cannot answer
(``ProviderStopped``, csro.llm.retry): the stop is recorded as a ``budget_exhausted`` or
``provider_stopped`` event, iteration k stays unfinished (a provider failure never becomes
an oracle failure), and a resume re-walks it.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

import numpy as np

from csro import events
from csro.arena import Arena
from csro.authorship import UNKNOWN, initial_author
from csro.config import RunConfig
from csro.errors import RunStopped
from csro.evaluation import PolicySpec, resolve
from csro.games import CodeGame
from csro.llm import Completer, LLMSession, stop_event
from csro.metagame import Solution, meta_game
from csro.oracles import Oracle, OracleContext, OracleResult
from csro.simulate import StoredSimulator
from csro.store import PolicyRecord, RunStore, SigmaRecord, StoreLog

EventFn = Callable[[int, str, dict], None]  # (iteration, kind, data)


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
      on_iteration: called after each iteration with the populations and sigma (one of each
        per player; one in a symmetric game); its dict is added to the iteration's record.
    """

    def __init__(self, config: RunConfig, game: CodeGame, store: RunStore, simulator: StoredSimulator, llm: Completer,
                 *, oracle: Oracle, arena: Arena, on_event: EventFn | None = None,
                 on_iteration: Callable[[int, list[list[PolicySpec]], list[np.ndarray]], dict] | None = None):
        self.config = config
        self.game = game
        self.store = store
        self.llm = llm
        self.oracle = oracle
        self.arena = arena
        self.on_event = on_event
        self.on_iteration = on_iteration
        self.meta = meta_game(game, config, simulator, oracle)

    def log(self, iteration: int, kind: str, data: dict) -> None:
        self.store.add_event(iteration, kind, data)
        if self.on_event:
            self.on_event(iteration, kind, data)

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> tuple[list[list[PolicyRecord]], Solution]:
        """Run (or continue) the K iterations; returns the populations and sigma_K."""
        self._initial()
        stored = self.store.policies()
        done = {d["iteration"] for d in self.store.iterations()}
        populations = [[r for r in stored if r.iteration == 0 and r.player == p] for p in range(self.meta.players)]
        solution = self._solve(0, populations)
        if 0 not in done:
            self._finish_iteration(solution, populations, time.monotonic())
        for k in range(1, self.config.iterations + 1):
            started = time.monotonic()
            if k not in done:
                self.log(k, events.ITERATION_START, {"population": sum(len(p) for p in populations)})
            for player, population in enumerate(populations):
                recorded = [r for r in stored if r.iteration == k and r.player == player]
                if recorded or k in done:  # stored before a crash ended the iteration, or a finished one
                    population.extend(recorded)
                    continue
                try:
                    new = self._member(k, player, population, self.respond(solution, player))
                except RunStopped as exc:  # iteration k stays unfinished
                    self.log(k, stop_event(exc), exc.data())
                    raise
                if new is not None:
                    self.store.add_policy(new)
                    population.append(new)
            solution = self._solve(k, populations)
            if k not in done:
                self._finish_iteration(solution, populations, started)
        return populations, solution

    # -- the steps of Algorithm 1 ---------------------------------------------------------
    def _initial(self) -> None:
        if self.store.policies():
            return
        ref = self.config.initial_policy
        spec = resolve(ref, self.game)
        for player in range(self.meta.players):
            self.store.add_policy(PolicyRecord(
                id=self.meta.policy_id(player, 0), player=player, iteration=0, oracle="initial", source=spec.source,
                ref=ref if spec.builtin else None, sha256=spec.sha256, parent=None,
                author=initial_author(ref if spec.builtin else None)))

    def _solve(self, iteration: int, populations: list[list[PolicyRecord]]) -> Solution:
        """Simulate the missing cells of U, solve the meta-game, store sigma_iteration."""
        solution = self.meta.solve(iteration, populations)
        fresh = not any(r.iteration == iteration for r in self.store.sigmas())
        for player, (names, sigma) in enumerate(zip(solution.names, solution.sigmas)):
            self.store.add_sigma(SigmaRecord(iteration, player, tuple(names), tuple(float(x) for x in sigma),
                                             self.config.meta_solver, solution.gap))
        if fresh:
            self.log(iteration, events.SIGMA, self.meta.record(solution))
        return solution

    def respond(self, solution: Solution, player: int) -> OracleResult:
        """The oracle's best response of ``player`` to ``solution`` (sigma_k), at iteration k + 1."""
        target = self.meta.target(solution, player)
        k = target.iteration
        return self.oracle.best_response(OracleContext(
            game=self.game, target=target,
            llm=LLMSession(self.llm, k, self.config.llm.temperature, self.config.seed, self.meta.scope(player)),
            arena=self.arena, config=self.config.oracle,
            log=StoreLog(self.store, k, player, lambda kind, data: self.log(k, kind, data))))

    def _member(self, iteration: int, player: int, population: list[PolicyRecord],
                result: OracleResult) -> PolicyRecord | None:
        """The oracle's program as the population's new member, if it is valid and new."""
        seat = {"player": player} if self.meta.players > 1 else {}
        if result.source is None:
            self.log(iteration, events.ORACLE_FAILED, {"reason": result.reason, "attempts": len(result.attempts), **seat})
            return None
        spec = self.arena.candidate(result.source)  # named as its oracle's matches were: they become its cells
        duplicate = next((r.id for r in population if r.sha256 == spec.sha256), None)
        if duplicate:
            self.log(iteration, events.DUPLICATE, {"of": duplicate, "reason": result.reason, **seat})
            return None
        fb = result.feedback
        return PolicyRecord(
            id=self.meta.policy_id(player, len(population)), player=player, iteration=iteration,
            oracle=self.oracle.name, source=result.source, ref=None, sha256=spec.sha256, parent=None,
            call_keys=tuple(result.call_keys), author=result.author or UNKNOWN,
            info={"utility": fb.utility if fb else None, "per_opponent": fb.per_opponent if fb else {},
                  "reason": result.reason, "attempts": [dataclasses.asdict(a) for a in result.attempts],
                  "played_as": spec.name})

    def _per_population(self, values: Sequence) -> object:
        """One value per population as a run records it: the value itself when one population
        plays every seat, else the list."""
        return values[0] if self.meta.players == 1 else list(values)

    def _finish_iteration(self, solution: Solution, populations: list[list[PolicyRecord]], started: float) -> None:
        k = solution.iteration
        data = {"population_size": self._per_population([len(p) for p in populations])}
        newest = [p[-1].info["utility"] for p in populations if p[-1].iteration == k and p[-1].info.get("utility") is not None]
        if newest:
            data["br_utility"] = self._per_population(newest)
        data["meta_nash_conv"] = solution.gap
        if solution.regrets is not None:
            data["regrets"] = list(solution.regrets)  # each player's regret under sigma_k in the empirical game
        if self.on_iteration:
            data.update(self.on_iteration(k, [list(m) for m in solution.members], list(solution.sigmas)))
        data["seconds"] = time.monotonic() - started
        self.store.mark_iteration(k, data)
        self.log(k, events.ITERATION_DONE, data)
