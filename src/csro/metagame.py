"""The meta-game of a CSRO run: U over the population(s), its uncertainty, its solution, and
what the oracle answers.

Two meta-games behind one interface (``MetaGame``), chosen by the game (``meta_game``):

- ``SymmetricMetaGame``: two-player zero-sum games whose seats play the same role share one
  population; U is antisymmetric with an unplayed diagonal (``EmpiricalGame``). This is the
  setting of Algorithm 1 of Hennes et al. (arXiv 2603.10098).
- ``ProfileMetaGame``: every other game (n players, general-sum, seats that differ) keeps one
  population per player and N payoff tensors over profiles (``ProfileGame``); the paper says
  "the loop transfers to general-sum and n-player games with per-player populations", and we
  read that as OpenSpiel's ``psro_v2`` does.

Each ``solve(iteration, populations)`` simulates the cells it lacks and returns a ``Solution``
(sigma per population, the joint distribution, the gap and each player's regret), and
``target(solution, player)`` is that solution as player ``player``'s oracle sees it at the next
iteration. A new member's cells are played under the name its oracle measured it by
(``csro.store.cell_names``), so the matches of its evaluation against sigma's support are
its cells and only the rest is played.

PSRO (and CSRO, Hennes et al. arXiv 2603.10098, Algorithm 1) solves the meta-game U whose
cells are *estimated* by simulation. With few matches per cell the estimate is noisy: one
1000-throw RRPS match has a standard deviation near 26, so a program that "beats" another by
13 over four matches may be no better at all, and a Nash meta-solver then puts all of sigma
on it. The paper is silent on cell sizes; our answer (issue "a meta-game decided by play"):

- every cell carries its standard error, and the loop can size a cell by its 95% confidence
  interval (``csro.simulate.StoredSimulator.play_sized``): simulation costs milliseconds a
  match, an LLM call tens of seconds;
- after each meta-solve, ``support_changes`` re-solves the meta-game on resampled payoff
  tables (each cell drawn from a normal with its mean and standard error, made exactly
  antisymmetric as the solver's input is) and reports how often sigma's support differs:
  0 means the data decide sigma; a high share means the noise does;
- ``meta_game.select: strongest`` (``strongest_plausible``) lets the data choose among the
  equilibria the noise cannot tell apart. In repeated RPS every policy's expected return
  against uniform random play is 0, so with the random initial policy in the population
  sigma = random is always an equilibrium of U, and the LP's vertex -- random, or a program
  that "beat" another by noise -- is an accident of the estimate. Among the mixtures that no
  member beats by more than the 95% CI of its cells, ``strongest_plausible`` takes the one
  with the highest mean return against the population: weight moves to the members that
  exploit others and away from those some member exploits.
"""

from __future__ import annotations

import abc
import dataclasses
import itertools
import math
from typing import Sequence

import numpy as np
from scipy.optimize import linprog

from csro.arena import Opponent, Profile, Target
from csro.config import RunConfig
from csro.errors import ConfigError
from csro.evaluation import Z95, PayoffTable, PolicySpec, code_policy, resolve
from csro.evaluation import record as add_results
from csro.games import CodeGame
from csro.seeding import derive_seed
from csro.simulate import StoredSimulator
from csro.store import PolicyRecord, as_members, cell_names
from csro.solvers.meta import (
    JointMetaSolver,
    MetaSolver,
    clean_distribution,
    get_meta_solver,
    joint_marginals,
    meta_gap,
    meta_nash_conv,
    others_marginal,
    player_regrets,
    product_joint,
    symmetric_sigma,
)

SUPPORT_EPS = 1e-6  # a weight above this is in the support


@dataclasses.dataclass(frozen=True)
class EmpiricalGame:
    """U[i, j]: mean return of policy i against policy j, with standard errors and counts.

    The symmetric zero-sum case of the CSRO loop: the diagonal (a policy against itself) is
    0 by symmetry and not simulated (standard error 0, count 0).
    """

    names: tuple[str, ...]
    payoffs: np.ndarray
    sem: np.ndarray
    counts: np.ndarray

    @classmethod
    def symmetric(cls, table: PayoffTable, names: list[str]) -> "EmpiricalGame":
        n = len(names)
        payoffs, sem, counts = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n), dtype=int)
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if i != j:
                    cell = table.cell(a, b)
                    payoffs[i, j], sem[i, j], counts[i, j] = cell.mean, cell.sem, cell.count
        return cls(tuple(names), payoffs, sem, counts)

    @property
    def ci(self) -> np.ndarray:
        """Half-width of each cell's 95% confidence interval."""
        return Z95 * self.sem


def support(sigma: np.ndarray) -> frozenset[int]:
    return frozenset(int(i) for i in np.flatnonzero(np.asarray(sigma) > SUPPORT_EPS))


def strongest_plausible(game: EmpiricalGame) -> np.ndarray:
    """Among the mixtures that no member beats by more than its cells' 95% CI, the one with
    the highest mean return against the population (the ``strongest`` selection).

    With S = (U - U^T) / 2 (the antisymmetric game the solvers see) and C the symmetrised CI
    half-widths, member j's return against sigma is -sigma^T S[:, j]; sigma is *plausible*
    when sigma^T (S + C)[:, j] >= 0 for every j -- an epsilon-equilibrium of the symmetric
    zero-sum game (value 0) with epsilon set cell by cell by the data. Every exact Nash sigma
    of S is plausible, so the LP (HiGHS) is always feasible; its objective is
    mean_j sigma^T S[:, j]. With exact cells (C = 0) it is the Nash equilibrium of S that
    gains most against the population. Our construction (the CSRO paper is silent).
    """
    s = 0.5 * (game.payoffs - game.payoffs.T)
    c = 0.5 * (game.ci + game.ci.T)
    n = len(s)
    if n == 1:
        return np.ones(1)
    result = linprog(-s.mean(axis=1), A_ub=-(s + c).T, b_ub=np.zeros(n), A_eq=np.ones((1, n)), b_eq=[1.0],
                     bounds=[(0.0, None)] * n, method="highs")
    if not result.success:  # cannot happen for a finite table (Nash is feasible); say so if it does
        raise RuntimeError(f"strongest_plausible: the LP failed: {result.message}")
    return clean_distribution(result.x)


def meta_sigma(game: EmpiricalGame, solver: str | MetaSolver, select: str = "solver") -> np.ndarray:
    """Sigma of the symmetric meta-game: the meta-solver's, or ``strongest_plausible``."""
    if select == "strongest":
        return strongest_plausible(game)
    return symmetric_sigma(game.payoffs, solver)


def support_changes(game: EmpiricalGame, solver: str, sigma: np.ndarray, resamples: int, seed: int,
                    select: str = "solver") -> float:
    """The share of ``resamples`` resampled games whose sigma has another support than ``sigma``.

    Each resample draws every off-diagonal cell from N(mean, sem^2) (keeping its standard
    error) and is solved as the run solves (``meta_sigma`` with a fresh ``solver``: a stateful
    solver starts from scratch, our choice, so the resamples do not disturb the run's own
    solver instance).
    """
    if resamples <= 0 or len(game.names) < 2:
        return 0.0
    rng = np.random.default_rng(seed)
    base = support(sigma)
    changed = 0
    for _ in range(resamples):
        u = game.payoffs + rng.standard_normal(game.payoffs.shape) * game.sem
        np.fill_diagonal(u, 0.0)
        resampled = dataclasses.replace(game, payoffs=u)
        changed += support(meta_sigma(resampled, get_meta_solver(solver), select)) != base
    return changed / resamples


@dataclasses.dataclass(frozen=True)
class ProfileGame:
    """The empirical game of per-player populations (n players, or seats that differ).

    ``payoffs[p][i_0, ..., i_{N-1}]`` is the mean return of seat p when player q plays member
    ``i_q`` of its population (the profile played with every policy in its own seat);
    ``sem`` the standard errors, ``counts`` the matches behind each profile.
    """

    names: tuple[tuple[str, ...], ...]
    payoffs: tuple[np.ndarray, ...]
    sem: tuple[np.ndarray, ...]
    counts: np.ndarray

    @classmethod
    def of(cls, names: Sequence[Sequence[str]], returns: dict[tuple[str, ...], list[tuple[float, ...]]]) -> "ProfileGame":
        """From each profile's match returns (profile of names, in seat order -> per-match returns)."""
        shape = tuple(len(n) for n in names)
        n = len(names)
        payoffs = [np.zeros(shape) for _ in range(n)]
        sem = [np.zeros(shape) for _ in range(n)]
        counts = np.zeros(shape, dtype=int)
        for index in np.ndindex(*shape):
            rows = np.asarray(returns[tuple(names[p][i] for p, i in enumerate(index))], dtype=float)
            counts[index] = len(rows)
            for p in range(n):
                payoffs[p][index] = rows[:, p].mean()
                sem[p][index] = rows[:, p].std(ddof=1) / math.sqrt(len(rows)) if len(rows) > 1 else 0.0
        return cls(tuple(tuple(x) for x in names), tuple(payoffs), tuple(sem), counts)


def symmetric(game: CodeGame) -> bool:
    """Whether one shared population plays every seat: two-player zero-sum games whose seats
    play the same role (seats alternate between matches). Every other game gets one
    population per player."""
    return game.num_players == 2 and game.zero_sum and game.seat_roles is None


@dataclasses.dataclass(frozen=True)
class Solution:
    """sigma_k: the solved meta-game after iteration k.

    Attributes:
      iteration: k.
      members: each population's members, in population order (one population in a symmetric
        game).
      sigmas: each population's sigma over its members.
      joint: the distribution over profiles: a joint solver's own (CE, CCE), else the product
        of the sigmas (in a symmetric game sigma against itself).
      gap: how far sigma is from the solver's equilibrium in the empirical game (NashConv of a
        product sigma, the CE / CCE gap of a joint one); the run records it as
        ``meta_nash_conv``.
      regrets: each player's regret under ``joint`` (per-player populations; None in a
        symmetric game, whose one population answers for both seats).
      values: each population's expected return under ``joint`` (0 in a symmetric zero-sum game).
      game: the empirical game that was solved.
    """

    iteration: int
    members: tuple[tuple[PolicySpec, ...], ...]
    sigmas: tuple[np.ndarray, ...]
    joint: np.ndarray
    gap: float
    regrets: tuple[float, ...] | None
    values: tuple[float, ...]
    game: EmpiricalGame | ProfileGame

    @property
    def names(self) -> list[list[str]]:
        return [[s.name for s in population] for population in self.members]


def policy_spec(record: PolicyRecord, game: CodeGame) -> PolicySpec:
    """A playable spec named by the record's id (built-ins keep their trusted implementation)."""
    if record.source is not None:
        return code_policy(record.id, record.source, game)
    return dataclasses.replace(resolve(record.ref, game), name=record.id)


def _opponent(spec: PolicySpec, weight: float) -> Opponent:
    return Opponent(spec.name, float(weight), spec, spec.builtin.description if spec.builtin else "")


class MetaGame(abc.ABC):
    """The empirical game of a run's populations: simulated, solved, and turned into targets.

    Attributes:
      players: the number of populations (1 when one population plays every seat).
    """

    players: int

    def __init__(self, config: RunConfig, simulator: StoredSimulator):
        self.config = config
        self.sim = simulator
        self.solver = get_meta_solver(config.meta_solver)  # one instance: a stateful solver sees every iteration

    @abc.abstractmethod
    def policy_id(self, player: int, index: int) -> str:
        """The id of member ``index`` of ``player``'s population."""

    @abc.abstractmethod
    def scope(self, player: int) -> str:
        """The prefix of ``player``'s oracle call keys (one population: none)."""

    @abc.abstractmethod
    def solve(self, iteration: int, populations: Sequence[Sequence[PolicyRecord]]) -> Solution:
        """Simulate the cells the populations lack and solve: sigma_iteration."""

    @abc.abstractmethod
    def record(self, solution: Solution) -> dict:
        """The ``sigma`` event of a solution: sigma, the gap and the empirical game behind it."""

    @abc.abstractmethod
    def target(self, solution: Solution, player: int) -> Target:
        """sigma_k as the oracle of ``player`` sees it at iteration k + 1."""

    def cell(self, members: Sequence[PolicyRecord]) -> tuple[PolicySpec, ...]:
        """The members of one cell, each named as its matches are seeded and stored
        (``csro.store.cell_names``)."""
        return tuple(dataclasses.replace(policy_spec(m, self.sim.game), name=n) for m, n in zip(members, cell_names(members)))


class SymmetricMetaGame(MetaGame):
    """One population in both seats; U[i, j] from the matches of i against j, seats alternated.

    Only the newest member's row is simulated (U[j, i] = -U[i, j] comes from the same
    matches, the diagonal is 0), sized by its confidence interval when ``meta_game.ci_width``
    asks for it; sigma is the meta-solver's or ``strongest_plausible`` (``meta_game.select``).
    """

    players = 1

    def policy_id(self, player: int, index: int) -> str:
        return f"p{index}"

    def scope(self, player: int) -> str:
        return ""

    def solve(self, iteration: int, populations: Sequence[Sequence[PolicyRecord]]) -> Solution:
        [population] = populations
        mg = self.config.meta_game
        self.sim.play_sized("meta", [self.cell((population[-1], old)) for old in population[:-1]],
                            self.config.matches_per_cell, ci_width=mg.ci_width, max_matches=mg.max_matches)
        table = PayoffTable()
        for i, a in enumerate(population):
            for b in population[:i]:
                add_results(table, as_members((a, b), self.sim.results("meta", [self.cell((a, b))], 0)))
        game = EmpiricalGame.symmetric(table, [m.id for m in population])
        specs = [policy_spec(m, self.sim.game) for m in population]
        sigma = meta_sigma(game, self.solver, mg.select)
        s = 0.5 * (game.payoffs - game.payoffs.T)
        gap = float(meta_nash_conv([s, -s], [sigma, sigma]))
        return Solution(iteration, (tuple(specs),), (sigma,), product_joint([sigma, sigma]), gap, None, (0.0,), game)

    def record(self, solution: Solution) -> dict:
        game, [sigma] = solution.game, solution.sigmas
        mg = self.config.meta_game
        data = {"sigma": dict(zip(game.names, map(float, sigma))), "meta_nash_conv": solution.gap,
                "u": game.payoffs.tolist(), "u_ci95": game.ci.tolist(), "u_matches": game.counts.tolist()}
        if mg.resamples:
            data["support_changes"] = support_changes(
                game, self.config.meta_solver, sigma, mg.resamples,
                derive_seed(self.config.seed, "resample", solution.iteration), mg.select)
        return data

    def target(self, solution: Solution, player: int) -> Target:
        [specs], [sigma] = solution.members, solution.sigmas
        return Target(solution.iteration + 1, 0, tuple(_opponent(s, w) for s, w in zip(specs, sigma)))


class ProfileMetaGame(MetaGame):
    """One population per player; every profile simulated once, each policy in its own seat.

    The N payoff tensors are solved by the meta-solver: a joint solver's (CE, CCE) sigma is
    kept as the joint and its marginals, any other solver's sigmas as their product. The
    oracle of player p answers the other seats' sigma: their product for a product sigma, the
    others' joint marginal for a joint one (CCE's target; for CE we take the same one call per
    player, JPSRO would add one per recommendation).
    """

    def __init__(self, config: RunConfig, simulator: StoredSimulator, players: int):
        super().__init__(config, simulator)
        self.players = players

    def policy_id(self, player: int, index: int) -> str:
        return f"p{player}-{index}"

    def scope(self, player: int) -> str:
        return f"seat{player}-"

    def solve(self, iteration: int, populations: Sequence[Sequence[PolicyRecord]]) -> Solution:
        profiles = list(itertools.product(*populations))
        results = self.sim.profile_results("meta", [self.cell(pr) for pr in profiles], self.config.matches_per_cell)
        names = [[m.id for m in population] for population in populations]
        game = ProfileGame.of(names, {tuple(m.id for m in pr): [r.returns for r in rs]
                                      for pr, rs in zip(profiles, results)})
        members = [[policy_spec(m, self.sim.game) for m in population] for population in populations]
        payoffs = list(game.payoffs)
        if isinstance(self.solver, JointMetaSolver):
            joint = self.solver.solve_joint(payoffs)
            sigmas, concept = joint_marginals(joint), self.config.meta_solver
        else:
            sigmas = [np.asarray(s, dtype=float) for s in self.solver.solve(payoffs)]
            joint, concept = product_joint(sigmas), "nash"
        gap = float(meta_gap(payoffs, joint if concept != "nash" else sigmas, concept))
        return Solution(iteration, tuple(tuple(p) for p in members), tuple(sigmas), joint, gap,
                        tuple(player_regrets(payoffs, joint)), tuple(float(np.sum(u * joint)) for u in payoffs), game)

    def record(self, solution: Solution) -> dict:
        game = solution.game
        return {"sigma": [dict(zip(names, map(float, sigma))) for names, sigma in zip(game.names, solution.sigmas)],
                "meta_nash_conv": solution.gap, "gap": self._concept, "regrets": list(solution.regrets),
                "joint": solution.joint.tolist(), "u": [u.tolist() for u in game.payoffs],
                "u_matches": game.counts.tolist()}

    @property
    def _concept(self) -> str:
        return self.config.meta_solver if isinstance(self.solver, JointMetaSolver) else "nash"

    def target(self, solution: Solution, player: int) -> Target:
        others = [p for p in range(self.players) if p != player]
        marginal = others_marginal(solution.joint, player)
        members, sigmas = solution.members, solution.sigmas
        profiles = tuple(
            Profile(float(marginal[index]), tuple(
                None if p == player else _opponent(members[p][index[others.index(p)]], sigmas[p][index[others.index(p)]])
                for p in range(self.players)))
            for index in np.ndindex(*marginal.shape))
        shown = tuple(_opponent(s, w) for p in others for s, w in zip(members[p], sigmas[p]))
        return Target(solution.iteration + 1, player, shown, profiles)


def meta_game(game: CodeGame, config: RunConfig, simulator: StoredSimulator, oracle) -> MetaGame:
    """The meta-game ``game`` needs (``symmetric``), refusing what it cannot run with per-player
    populations: a selection other than the solver's, or an ``oracle`` that does not declare
    ``per_player`` (it answers one shared population only)."""
    if symmetric(game):
        return SymmetricMetaGame(config, simulator)
    if config.meta_game.select != "solver":
        raise ConfigError(f"meta_game.select: {config.meta_game.select} needs a symmetric two-player zero-sum game; "
                          f"{game.name!r} has one population per player (use select: solver)")
    if not oracle.per_player:
        raise ConfigError(f"oracle.kind: {oracle.name} runs symmetric two-player zero-sum games; {game.name!r} "
                          "needs one population per player (use an oracle kind that answers one seat, e.g. zero_shot)")
    return ProfileMetaGame(config, simulator, game.num_players)
