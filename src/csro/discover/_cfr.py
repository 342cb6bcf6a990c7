"""Discovering CFR variants: the three hooks of Li et al. (arXiv 2602.16928) as one program.

The search space is the paper's: a CFR variant is its ``RegretAccumulator``,
``PolicyFromRegretAccumulator`` and ``PolicyAccumulator``. Here a program is one class
``Hooks`` with the three methods, called by the library's vectorised engine
(``csro.solvers.cfr``, all infosets of a player at once; see ``_hooks.py`` for the contract).
The search starts from CFR+ written as such a class.

The program runs in the sandbox together with a fixed driver that builds the game tree, runs
the engine with the hooks and answers the *average policy* at each checkpoint. The
exploitability is computed here, in the trusted process, from that policy after checking it
(shape, finite, a distribution over the legal actions): a program cannot report a number, only
a policy, so its fitness is what its policy is worth.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from csro.solvers.cfr import exploitability, load_tree
from csro.solvers.suite import SuiteGame

from ._grammar import cfr_grammar
from ._problem import SuiteProblem
from ._sandboxed import ProgramFailure, SandboxedProgram

CFR_PLUS = '''\
import numpy as np


class Hooks:
    """CFR+: regret matching+ (cumulative regret floored at 0), linear averaging."""

    def update_accumulate_regret(self, block, t, regrets):
        return np.maximum(block.cumulative_regret + regrets, 0.0)

    def get_updated_current_policy(self, block, t, regrets, previous_policy):
        positive = np.maximum(block.cumulative_regret, 0.0) * block.legal
        total = positive.sum(axis=1, keepdims=True)
        uniform = block.legal / block.legal.sum(axis=1, keepdims=True)
        return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)

    def update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach):
        return block.cumulative_policy + ((t + 1.0) * reach)[:, None] * policy
'''

# Appended after the program, so its names win over any the program defines.
DRIVER = '''


class _CSRODiscoveryDriver:
    def solve(self, game, checkpoints):
        from csro.solvers.cfr import (CFRSolver, PolicyAccumulator, PolicyFromRegretAccumulator,
                                      RegretAccumulator, Variant, build_tree)
        hooks = Hooks()

        class Regret(RegretAccumulator):
            def update_accumulate_regret(self, block, t, regrets):
                return hooks.update_accumulate_regret(block, t, regrets)

        class Current(PolicyFromRegretAccumulator):
            def get_updated_current_policy(self, block, t, regrets, previous_policy):
                return hooks.get_updated_current_policy(block, t, regrets, previous_policy)

        class Average(PolicyAccumulator):
            def update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach):
                return hooks.update_accumulate_policy(block, t, policy, regrets, reach, cf_reach)

        solver = CFRSolver(build_tree(game, capture_errors=False), Variant("candidate", Regret(), Current(), Average()))
        out, done = [], 0
        for c in checkpoints:
            solver.run(c - done)
            done = c
            out.append([a.tolist() for a in solver.average_policy_arrays()])
        return out
'''

API = """\
A CFR variant is one Python class `Hooks` with exactly these three methods. A tabular CFR engine
(alternating updates, exact traversal) calls them once per iteration t (0-based) for the player
being updated, with ALL information sets of that player at once as 2-D numpy arrays: one row per
infoset, one column per action slot; columns past an infoset's action count are padding, 0 on
input, and must stay 0 on output.

- `update_accumulate_regret(self, block, t, regrets)` -> the new cumulative regret (n, A);
  `regrets` are this iteration's instantaneous counterfactual regrets, `block.cumulative_regret`
  is the old cumulative regret.
- `get_updated_current_policy(self, block, t, regrets, previous_policy)` -> the next current policy
  (n, A): rows non-negative, summing to 1 over the legal slots (`block.legal`, bool (n, A)), 0 on padding;
  `block.cumulative_regret` already holds the new cumulative regret.
- `update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach)` -> the new cumulative
  policy (n, A); `reach` (n,) is the player's own reach, `cf_reach` (n,) the others' and chance's.
  The average policy (what is scored) is this cumulative policy normalised per row.

`block` also has `player`, `num_actions` (n,) and `cumulative_policy`. Keep state per player
(key it by `block.player`) if you need any. Only numpy and the standard library are available.
"""


class CFRHooksProblem(SuiteProblem):
    """Fitness of a ``Hooks`` program: -mean exploitability of its average policy after K iterations."""

    class_name = "Hooks"
    api = API
    seed_program = CFR_PLUS
    rewrite_grammar = cfr_grammar()

    def fitness_text(self) -> str:
        return ("Variants such as CFR+, discounted CFR, predictive CFR+ and warm-started averaging are all choices "
                "of these three methods. The fitness is minus the mean exploitability (NashConv / players) of the "
                "average policy")

    def curve(self, source: str, game: SuiteGame, iterations: int, checkpoints: Sequence[int]) -> list[float]:
        tree = load_tree(game.game)  # trusted: built here, checked against what the program answers
        with SandboxedProgram(source + DRIVER, "_CSRODiscoveryDriver", self.limits) as program:
            answers = program.call("solve", game.game, sorted(checkpoints))
        if not isinstance(answers, list) or len(answers) != len(checkpoints):
            raise ProgramFailure("malformed: the driver did not answer one policy per checkpoint")
        return [exploitability(tree, _checked_policy(tree, arrays)) for arrays in answers]


def _checked_policy(tree, arrays) -> list[np.ndarray]:
    """The average policy arrays, refused unless each row is a distribution over its legal actions."""
    if not isinstance(arrays, list) or len(arrays) != tree.num_players:
        raise ProgramFailure("malformed: one policy array per player was expected")
    out = []
    for p, (arr, info) in enumerate(zip(arrays, tree.players)):
        try:
            a = np.asarray(arr, dtype=np.float64)
        except (TypeError, ValueError):
            raise ProgramFailure(f"malformed: player {p}'s policy is not a numeric array") from None
        legal = info.legal
        if a.shape != legal.shape or not np.all(np.isfinite(a)) or np.any(a < -1e-9) or np.any(a[~legal] > 1e-9) \
                or not np.allclose(a.sum(axis=1), 1.0, atol=1e-6):
            raise ProgramFailure(f"malformed: player {p}'s average policy is not a distribution over legal actions")
        out.append(a)
    return out
