"""Discovering PSRO meta-solvers: the training meta-strategy solver of Li et al. (arXiv 2602.16928).

The paper evolves ``TrainMetaStrategySolver.get_meta_strategy`` (the best-response target)
and scores it by the exploitability of the evaluation solver's mixture after K iterations of
PSRO with exact best responses and exact meta-game payoffs. Here the program is one class
``MetaSolver`` with ``solve(payoffs) -> weights``; the trusted exact-PSRO loop
(``csro.solvers.psro_exact``) runs here and asks the sandboxed program for sigma at every
iteration, checking each answer (one non-negative finite weight per population member and
player). The evaluation solver is a library one (``eval_solver``, Nash by default), so the
program influences only which best responses enter the populations. Our choice of seed: a
regret-matching meta-solver (short and better than uniform, worse than an exact Nash).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Sequence

import numpy as np

from csro.solvers.meta import MetaSolver, get_meta_solver
from csro.solvers.psro_exact import run_psro_exact
from csro.solvers.suite import SuiteGame

from ._problem import SuiteProblem
from ._sandboxed import ProgramFailure, SandboxedProgram

REGRET_MATCHING = '''\
import numpy as np


class MetaSolver:
    """Regret matching on the meta-game, averaged over 300 rounds."""

    def solve(self, payoffs):
        tensors = [np.asarray(p, dtype=float) for p in payoffs]
        n = len(tensors)
        sizes = tensors[0].shape
        regrets = [np.zeros(k) for k in sizes]
        totals = [np.zeros(k) for k in sizes]
        for _ in range(300):
            sigma = []
            for r in regrets:
                positive = np.maximum(r, 0.0)
                sigma.append(positive / positive.sum() if positive.sum() > 0 else np.full(len(r), 1.0 / len(r)))
            for p in range(n):
                values = tensors[p]
                for q in reversed(range(n)):
                    if q != p:
                        values = np.tensordot(values, sigma[q], axes=([q], [0])) if q < values.ndim else values
                values = np.asarray(values).reshape(-1)
                regrets[p] += values - values @ sigma[p]
                totals[p] += sigma[p]
        return [(t / t.sum()).tolist() for t in totals]
'''

API = """\
A PSRO meta-solver is one Python class `MetaSolver` with a method `solve(self, payoffs)`. PSRO
calls it once per iteration with the exact meta-game: `payoffs` is a list with one N-dimensional
nested list per player; `payoffs[p][i_0]...[i_{N-1}]` is player p's expected payoff when each
player q plays its population member i_q. It must return one list of non-negative weights per
player (one weight per member of that player's population; they are normalised). PSRO then adds,
for every player, an exact best response to the returned mixture. Only numpy and the standard
library are available.
"""


class MetaSolverProblem(SuiteProblem):
    """Fitness of a ``MetaSolver`` program: -mean exploitability after K exact-PSRO iterations."""

    class_name = "MetaSolver"
    api = API
    seed_program = REGRET_MATCHING

    def __init__(self, *args, eval_solver: str = "nash", **kwargs):
        super().__init__(*args, **kwargs)
        self.eval_solver = eval_solver

    def fitness_text(self) -> str:
        return ("Uniform (fictitious play), Nash, replicator dynamics and annealed, regret-based mixtures are all "
                "meta-solvers of this kind. The fitness is minus the mean exploitability (NashConv / players) of "
                f"the {self.eval_solver} mixture of the populations")

    def curve(self, source: str, game: SuiteGame, iterations: int, checkpoints: Sequence[int]) -> list[float]:
        with SandboxedProgram(source, self.class_name, self.limits) as program:
            result = run_psro_exact(game.game, train_solver=Sandboxed(program),
                                    eval_solver=get_meta_solver(self.eval_solver), iterations=iterations)
        players = result.psro.num_players
        return [result.nash_conv[c - 1] / players for c in checkpoints]


@dataclasses.dataclass
class Sandboxed(MetaSolver):
    """A meta-solver whose ``_solve`` is the sandboxed program's ``solve``, its answers checked."""

    program: SandboxedProgram
    name: ClassVar[str] = "discovered"

    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        answer = self.program.call("solve", [t.tolist() for t in tensors])
        shape = tensors[0].shape
        if not isinstance(answer, list) or len(answer) != len(shape):
            raise ProgramFailure("malformed: solve must return one weight list per player")
        out = []
        for p, weights in enumerate(answer):
            try:
                w = np.asarray(weights, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError):
                raise ProgramFailure(f"malformed: player {p}'s weights are not numbers") from None
            if w.shape != (shape[p],) or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ProgramFailure(f"malformed: player {p} needs {shape[p]} finite non-negative weights")
            out.append(w)
        return out
