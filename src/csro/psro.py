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
uninterrupted run would. The same holds for a run stopped by its LLM budget
(``BudgetExhausted``, csro.llm.budget): the stop is recorded as a ``budget_exhausted``
event, iteration k stays unfinished, and a resume with a larger budget re-walks it.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np
import pyspiel

from csro.config import RunConfig
from csro.errors import BudgetExhausted, ConfigError
from csro.evaluation.policy_ref import PolicySpec, code_policy, resolve
from csro.games import CodeGame
from csro.llm import BUDGET_EVENT
from csro.oracles import Feedback, Opponent, OracleContext, get_oracle
from csro.simulate import StoredSimulator
from csro.solvers.meta import get_meta_solver, meta_nash_conv, symmetric_sigma
from csro.store import PolicyRecord, SigmaRecord

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
    """One CSRO run over a store. ``run()`` is Algorithm 1; resumable at any point."""

    def __init__(self, config: RunConfig, game: CodeGame, store, simulator: StoredSimulator, llm,
                 *, on_event: EventFn | None = None, on_iteration: Callable[[int, list[PolicySpec], np.ndarray], dict] | None = None):
        check_game(game)
        self.config = config
        self.game = game
        self.store = store
        self.sim = simulator
        self.llm = llm
        self.oracle = get_oracle(config.oracle.kind)
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
        self.sim.play("meta", [(newest, old) for old in specs[:-1]], self.config.matches_per_cell)
        names = [s.name for s in specs]
        u = self.payoff_matrix(names)
        sigma = symmetric_sigma(u, self.meta_solver)
        s = 0.5 * (u - u.T)
        conv = float(meta_nash_conv([s, -s], [sigma, sigma]))
        fresh = not any(r.iteration == iteration for r in self.store.sigmas())
        self.store.add_sigma(SigmaRecord(iteration, 0, tuple(names), tuple(float(x) for x in sigma),
                                         self.config.meta_solver, conv))
        if fresh:
            self.log(iteration, "sigma", {"sigma": dict(zip(names, map(float, sigma))), "meta_nash_conv": conv})
        return sigma

    def payoff_matrix(self, names: list[str]) -> np.ndarray:
        """U[i, j] = mean return of policy i against j over the stored meta matches."""
        table = self.store.payoff_table("meta")
        n = len(names)
        u = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                if i != j:
                    u[i, j] = table.mean(names[i], names[j])
        return u

    def _candidate(self, source: str) -> PolicySpec:
        """A candidate program, named by its hash (so its stored matches are found again)."""
        spec = code_policy("cand", source, self.game)
        return dataclasses.replace(spec, name=f"cand-{spec.sha256[:12]}")

    def _play(self, sources, names, matches: int) -> list[dict[str, float]]:
        """The oracle's ``play``: candidates against named population members, phase ``oracle``."""
        by_name = {s.name: s for s in self._specs()}
        candidates = [self._candidate(s) for s in sources]
        table = self.sim.play("oracle", [(c, by_name[n]) for c in candidates for n in names], matches)
        return [{n: table.mean(c.name, n) for n in names} for c in candidates]

    def _evaluator(self, iteration: int, sigma: np.ndarray) -> Callable[[str], Feedback]:
        """The paper's u: a candidate's sigma-weighted mean return against sigma's support."""
        support = [(spec, float(w)) for spec, w in zip(self._specs(), sigma) if w > 0]
        cache: dict[str, Feedback] = {}

        def evaluate(source: str) -> Feedback:
            candidate = self._candidate(source)
            if candidate.name in cache:
                return cache[candidate.name]
            table = self.sim.play("oracle", [(candidate, spec) for spec, _ in support], self.config.matches_per_cell)
            per_opponent = {spec.name: table.mean(candidate.name, spec.name) for spec, _ in support}
            utility = float(sum(w * per_opponent[spec.name] for spec, w in support))
            forfeits = dict(table.forfeits(candidate.name))
            details = tuple(
                {"opponents": [p for p in r.policies if p != candidate.name], "reason": r.forfeit[1], "detail": r.forfeit[2]}
                for r in self.store.matches("oracle", {candidate.name} | {s.name for s, _ in support})
                if r.forfeit and r.policies[r.forfeit[0]] == candidate.name)[:3]
            fb = Feedback(utility, per_opponent, forfeits, details, sum(table.count(candidate.name, s.name) for s, _ in support))
            cache[candidate.name] = fb
            return fb

        return evaluate

    def _best_response(self, iteration: int, sigma: np.ndarray) -> None:
        """Call the oracle against sigma_{k-1}; add its program if it is valid and new."""
        opponents = [
            Opponent(spec.name, float(w), spec, spec.builtin.description if spec.builtin else "")
            for spec, w in zip(self._specs(), sigma)
        ]
        ctx = OracleContext(
            game=self.game, iteration=iteration, player=0, opponents=opponents, llm=self.llm,
            evaluate=self._evaluator(iteration, sigma), config=self.config.oracle,
            temperature=self.config.llm.temperature, seed=self.config.seed,
            log=lambda kind, data: self.log(iteration, kind, data), play=self._play, programs=self.store,
            grammar=self.config.llm.provider == "embedded", matches=self.config.matches_per_cell)
        result = self.oracle.best_response(ctx)
        if result.source is None:
            self.log(iteration, "oracle_failed", {"reason": result.reason, "attempts": len(result.attempts)})
            return
        spec = code_policy("new", result.source, self.game)
        duplicate = next((r.id for r in self.populations[0] if r.sha256 == spec.sha256), None)
        if duplicate:
            self.log(iteration, "duplicate", {"of": duplicate, "reason": result.reason})
            return
        fb = result.feedback
        self._add(PolicyRecord(
            id=f"p{len(self.populations[0])}", player=0, iteration=iteration, oracle=self.oracle.name,
            source=result.source, ref=None, sha256=spec.sha256, parent=None,
            call_keys=tuple(result.call_keys),
            info={"utility": fb.utility if fb else None, "per_opponent": fb.per_opponent if fb else {},
                  "reason": result.reason, "attempts": result.attempts}))

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
                self.log(k, "iteration_start", {"population": len(self.populations[0])})
                recorded = [r for r in stored if r.iteration == k]
                if recorded:  # the policy was stored before a crash ended the iteration
                    self.populations[0].extend(recorded)
                else:
                    try:
                        self._best_response(k, sigma)
                    except BudgetExhausted as exc:  # stop at the boundary: iteration k stays unfinished
                        self.log(k, BUDGET_EVENT, {"reason": str(exc)})
                        raise
            sigma = self._solve(k)
            if k not in done:
                self._finish_iteration(k, sigma, started)
        return self.populations[0], sigma

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
        self.log(k, "iteration_done", data)
