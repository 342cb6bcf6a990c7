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

The same loop for any other game — n players, general-sum, or seats that differ — keeps one
population per player (the paper: "the loop transfers to general-sum and n-player games with
per-player populations"; our reading, as OpenSpiel's ``psro_v2``)::

    P_p = {initial policy} for every player p;  U_p = payoffs of every profile
    for k in 1..K:
        for each player p:  pi_k^p = oracle(seat p's rules and API, sigma_{-p})   # one call each
        P_p = P_p + {pi_k^p};  U = U + the profiles with a new member only         (simulated)
        sigma_k = meta-solve(U_0, ..., U_{N-1})    # a product sigma, or a joint one (CE, CCE)

A profile is played with every policy in its own seat. The oracle of player p answers the
other seats' sigma: their product for a product sigma, the others' joint marginal for a
joint one (CCE's target; for CE we take the same one call per player, JPSRO would add one per
recommendation). Its call keys carry the seat (``seat1-propose``), its policies are ``p1-3``.

Everything is written to the run store when produced; a resumed run re-walks the
iterations with the store as its cache (stored matches are not replayed, recorded LLM
calls are served from the store, finished iterations are not re-run), so it ends where an
uninterrupted run would. The same holds for a run stopped by its LLM budget
(``BudgetExhausted``, csro.llm.budget): the stop is recorded as a ``budget_exhausted``
event, iteration k stays unfinished, and a resume with a larger budget re-walks it.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Callable

import numpy as np

from csro import events
from csro.arena import Arena, Opponent, Profile, Target
from csro.config import RunConfig
from csro.errors import BudgetExhausted, ConfigError
from csro.evaluation import PolicySpec, code_policy, resolve
from csro.games import CodeGame
from csro.llm import Completer, LLMSession
from csro.metagame import EmpiricalGame, ProfileGame, meta_sigma, support_changes
from csro.oracles import Oracle, OracleContext
from csro.seeding import derive_seed
from csro.simulate import StoredSimulator
from csro.solvers.meta import (
    JointMetaSolver,
    get_meta_solver,
    joint_marginals,
    meta_gap,
    meta_nash_conv,
    others_marginal,
    player_regrets,
    product_joint,
)
from csro.store import PolicyRecord, RunStore, SigmaRecord

EventFn = Callable[[int, str, dict], None]  # (iteration, kind, data)


def policy_spec(record: PolicyRecord, game: CodeGame) -> PolicySpec:
    """A playable spec named by the record's id (built-ins keep their trusted implementation)."""
    if record.source is not None:
        return code_policy(record.id, record.source, game)
    return dataclasses.replace(resolve(record.ref, game), name=record.id)


def symmetric(game: CodeGame) -> bool:
    """Whether one shared population plays every seat: two-player zero-sum games whose seats
    play the same role (seats alternate between matches). Every other game gets one
    population per player."""
    return game.num_players == 2 and game.zero_sum and game.seat_roles is None


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
        self.sim = simulator
        self.llm = llm
        self.oracle = oracle
        self.arena = arena
        self.meta_solver = get_meta_solver(config.meta_solver)  # one instance: stateful solvers see every iteration
        self.on_event = on_event
        self.on_iteration = on_iteration
        self.symmetric = symmetric(game)
        self.players = 1 if self.symmetric else game.num_players
        if not self.symmetric and oracle.name == "evolve":
            raise ConfigError(f"oracle.kind: evolve runs symmetric two-player zero-sum games; {game.name!r} "
                              "needs one population per player (use zero_shot, linear_refinement or reflect)")
        if not self.symmetric and config.meta_game.select != "solver":
            raise ConfigError(f"meta_game.select: {config.meta_game.select} needs a symmetric two-player zero-sum game; "
                              f"{game.name!r} has one population per player (use select: solver)")
        self.populations: list[list[PolicyRecord]] = [[] for _ in range(self.players)]

    # -- bookkeeping ------------------------------------------------------------------
    def log(self, iteration: int, kind: str, data: dict) -> None:
        self.store.add_event(iteration, kind, data)
        if self.on_event:
            self.on_event(iteration, kind, data)

    def _specs(self, player: int = 0) -> list[PolicySpec]:
        return [policy_spec(r, self.game) for r in self.populations[player]]

    def _id(self, player: int, index: int) -> str:
        return f"p{index}" if self.symmetric else f"p{player}-{index}"

    def _add(self, record: PolicyRecord) -> None:
        self.store.add_policy(record)
        self.populations[record.player].append(record)

    # -- the steps of Algorithm 1 ---------------------------------------------------------
    def _initial(self) -> None:
        if self.store.policies():
            return
        ref = self.config.initial_policy
        spec = resolve(ref, self.game)
        for player in range(self.players):
            self.store.add_policy(PolicyRecord(
                id=self._id(player, 0), player=player, iteration=0, oracle="initial", source=spec.source,
                ref=ref if spec.builtin else None, sha256=spec.sha256, parent=None))

    def _solve(self, iteration: int) -> list[np.ndarray]:
        """Simulate the missing cells of U, solve the meta-game, store sigma_iteration."""
        if not self.symmetric:
            return self._solve_profiles(iteration)
        specs = self._specs()
        newest = specs[-1]
        mg = self.config.meta_game
        self.sim.play_sized("meta", [(newest, old) for old in specs[:-1]], self.config.matches_per_cell,
                            ci_width=mg.ci_width, max_matches=mg.max_matches)
        names = [s.name for s in specs]
        game = self.empirical_game(names)
        sigma = meta_sigma(game, self.meta_solver, mg.select)
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
                                                          derive_seed(self.config.seed, "resample", iteration),
                                                          mg.select)
            self.log(iteration, events.SIGMA, data)
        return [sigma]

    def empirical_game(self, names: list[str]) -> EmpiricalGame:
        """U over the named members from the stored meta matches, with standard errors."""
        return EmpiricalGame.symmetric(self.store.payoff_table("meta"), names)

    def _solve_profiles(self, iteration: int) -> list[np.ndarray]:
        """Per-player populations: every profile simulated once (seats fixed), the N payoff
        tensors solved; a joint solver's sigma is kept as the joint and its marginals."""
        specs = [self._specs(p) for p in range(self.players)]
        profiles = list(itertools.product(*specs))
        results = self.sim.profile_results("meta", profiles, self.config.matches_per_cell)
        names = [[s.name for s in population] for population in specs]
        game = ProfileGame.of(names, {tuple(s.name for s in pr): [r.returns for r in rs]
                                      for pr, rs in zip(profiles, results)})
        if isinstance(self.meta_solver, JointMetaSolver):
            joint = self.meta_solver.solve_joint(list(game.payoffs))
            sigmas, concept = joint_marginals(joint), self.config.meta_solver
        else:
            sigmas = [np.asarray(s, dtype=float) for s in self.meta_solver.solve(list(game.payoffs))]
            joint, concept = product_joint(sigmas), "nash"
        gap = float(meta_gap(list(game.payoffs), joint if concept != "nash" else sigmas, concept))
        self.joint, self.profile_game = joint, game
        self.regrets = player_regrets(list(game.payoffs), joint)
        fresh = not any(r.iteration == iteration for r in self.store.sigmas())
        for p in range(self.players):
            self.store.add_sigma(SigmaRecord(iteration, p, tuple(names[p]), tuple(float(x) for x in sigmas[p]),
                                             self.config.meta_solver, gap))
        if fresh:
            self.log(iteration, events.SIGMA, {
                "sigma": [dict(zip(names[p], map(float, sigmas[p]))) for p in range(self.players)],
                "meta_nash_conv": gap, "gap": concept, "regrets": self.regrets, "joint": joint.tolist(),
                "u": [u.tolist() for u in game.payoffs], "u_matches": game.counts.tolist()})
        return sigmas

    def _target(self, iteration: int, player: int, sigmas: list[np.ndarray]) -> Target:
        """sigma as player ``player``'s oracle sees it (see the module docstring)."""
        def opponent(spec: PolicySpec, weight: float) -> Opponent:
            return Opponent(spec.name, float(weight), spec, spec.builtin.description if spec.builtin else "")

        if self.symmetric:
            return Target(iteration, 0, tuple(opponent(s, w) for s, w in zip(self._specs(), sigmas[0])))
        others = [p for p in range(self.players) if p != player]
        marginal = others_marginal(self.joint, player)
        specs = {p: self._specs(p) for p in others}
        profiles = tuple(
            Profile(float(marginal[index]), tuple(None if p == player else opponent(specs[p][index[others.index(p)]],
                                                                                    sigmas[p][index[others.index(p)]])
                                                  for p in range(self.players)))
            for index in np.ndindex(*marginal.shape))
        shown = tuple(opponent(s, w) for p in others for s, w in zip(specs[p], sigmas[p]))
        return Target(iteration, player, shown, profiles)

    def _context(self, target: Target) -> OracleContext:
        """What the oracle gets for ``target``: sigma, the LLM of its iteration and seat, and the rest."""
        k = target.iteration
        scope = "" if self.symmetric else f"seat{target.player}-"
        return OracleContext(
            game=self.game, target=target,
            llm=LLMSession(self.llm, k, self.config.llm.temperature, self.config.seed, scope),
            arena=self.arena, config=self.config.oracle,
            log=StoreLog(self.store, k, target.player, lambda kind, data: self.log(k, kind, data)))

    def _best_response(self, iteration: int, player: int, sigmas: list[np.ndarray]) -> None:
        """Call the oracle against sigma_{k-1}; add its program if it is valid and new."""
        result = self.oracle.best_response(self._context(self._target(iteration, player, sigmas)))
        seat = {} if self.symmetric else {"player": player}
        if result.source is None:
            self.log(iteration, events.ORACLE_FAILED, {"reason": result.reason, "attempts": len(result.attempts), **seat})
            return
        spec = code_policy("new", result.source, self.game)
        population = self.populations[player]
        duplicate = next((r.id for r in population if r.sha256 == spec.sha256), None)
        if duplicate:
            self.log(iteration, events.DUPLICATE, {"of": duplicate, "reason": result.reason, **seat})
            return
        fb = result.feedback
        self._add(PolicyRecord(
            id=self._id(player, len(population)), player=player, iteration=iteration, oracle=self.oracle.name,
            source=result.source, ref=None, sha256=spec.sha256, parent=None,
            call_keys=tuple(result.call_keys),
            info={"utility": fb.utility if fb else None, "per_opponent": fb.per_opponent if fb else {},
                  "reason": result.reason, "attempts": [dataclasses.asdict(a) for a in result.attempts]}))

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> tuple[list[list[PolicyRecord]], list[np.ndarray]]:
        """Run (or continue) the K iterations; returns the populations and sigma_K (one of each
        per player; one in a symmetric game)."""
        self._initial()
        stored = self.store.policies()
        done = {d["iteration"] for d in self.store.iterations()}
        self.populations = [[r for r in stored if r.iteration == 0 and r.player == p] for p in range(self.players)]
        sigmas = self._solve(0)
        if 0 not in done:
            self._finish_iteration(0, sigmas, time.monotonic())
        for k in range(1, self.config.iterations + 1):
            started = time.monotonic()
            if k not in done:
                self.log(k, events.ITERATION_START, {"population": sum(len(p) for p in self.populations)})
            for player in range(self.players):
                recorded = [r for r in stored if r.iteration == k and r.player == player]
                if recorded or k in done:  # stored before a crash ended the iteration, or a finished one
                    self.populations[player].extend(recorded)
                else:
                    try:
                        self._best_response(k, player, sigmas)
                    except BudgetExhausted as exc:  # stop at the boundary: iteration k stays unfinished
                        self.log(k, events.BUDGET_EXHAUSTED, {"reason": str(exc)})
                        raise
            sigmas = self._solve(k)
            if k not in done:
                self._finish_iteration(k, sigmas, started)
        return self.populations, sigmas

    def exploitability_estimate(self, sigmas: list[np.ndarray]) -> dict:
        """One more best response, against sigma_K (iteration K + 1; not added to the population).

        In a symmetric zero-sum game sigma_K's exploitability is max over policies pi of
        u(pi, sigma_K), since u(sigma_K, sigma_K) = 0; the utility of any program against sigma_K
        is a lower bound on it, and the oracle's best answer is the tightest one it can find
        *within code space*. Its 95% interval comes from the matches behind it. Our addition
        (the paper gives no exploitability for RRPS or Leduc); exact NashConv stays where the
        game is small enough (``csro.scoring``). With per-player populations, one best response
        per player; the estimate is their sum minus sigma_K's own values (a NashConv bound).
        """
        k = self.config.iterations + 1
        parts = []
        for player in range(self.players):
            result = self.oracle.best_response(self._context(self._target(k, player, sigmas)))
            parts.append((result, result.feedback))
        fbs = [fb for _, fb in parts]
        data = {"iteration": k, "reason": "; ".join(r.reason for r, _ in parts),
                "utility": None, "ci95": None, "lower_bound": None, "matches": sum(fb.matches for fb in fbs if fb),
                "sha256": [code_policy("br", r.source, self.game).sha256 if r.source else None for r, _ in parts]}
        if all(fbs):
            own = [0.0] if self.symmetric else self._values(sigmas)
            gain = sum(fb.utility - v for fb, v in zip(fbs, own))
            data.update(utility=gain, ci95=float(np.sqrt(sum(fb.ci95 ** 2 for fb in fbs))), lower_bound=max(0.0, gain))
        if self.symmetric:
            data["sha256"] = data["sha256"][0]
        self.log(k, events.EXPLOITABILITY_ESTIMATE, data)
        return data

    def _values(self, sigmas: list[np.ndarray]) -> list[float]:
        """Each player's expected return under sigma_K (its joint over the empirical game)."""
        return [float(np.sum(u * self.joint)) for u in self.profile_game.payoffs]

    def _finish_iteration(self, k: int, sigmas: list[np.ndarray], started: float) -> None:
        data = {"population_size": len(self.populations[0]) if self.symmetric else [len(p) for p in self.populations]}
        newest = [p[-1] for p in self.populations if p[-1].iteration == k and p[-1].info.get("utility") is not None]
        if newest:
            data["br_utility"] = newest[0].info["utility"] if self.symmetric else [r.info["utility"] for r in newest]
        data["meta_nash_conv"] = next(s.meta_nash_conv for s in self.store.sigmas() if s.iteration == k)
        if not self.symmetric:
            data["regrets"] = self.regrets  # each player's regret under sigma_k in the empirical game
        if self.on_iteration:
            data.update(self.on_iteration(k, [self._specs(p) for p in range(self.players)], sigmas))
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
