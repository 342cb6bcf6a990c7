"""The CFR family over one vectorised engine (``csro.solvers.cfr``).

The game tree is built once from OpenSpiel into flat NumPy arrays (``load_tree``, cached per
game string); an iteration is array operations level by level, with alternating updates and
exact traversal as in OpenSpiel's ``CFRSolver``. Every variant is a choice of three hooks,
the search space of Li et al., arXiv 2602.16928 (Listing 1):

``RegretAccumulator.update_accumulate_regret(block, t, regrets) -> R``
    the new cumulative regret of all infosets of the player being updated.
``PolicyAccumulator.update_accumulate_policy(block, t, policy, regrets, reach, cf_reach) -> S``
    the new cumulative policy (the average policy is S normalised).
``PolicyFromRegretAccumulator.get_updated_current_policy(block, t, regrets, previous_policy)``
    the next current policy, computed after R is stored.

Hooks receive arrays over all infosets of one player at once (rows: infosets in canonical
order; columns: legal-action slots, padded with zeros), not one node; ``t`` is 0-based. Input
arrays are read-only; a hook keeps its own state across calls (per ``block.player``). Each is
an ``abc.ABC`` with an ``@abstractmethod``; see ``csro.solvers.cfr._hooks`` for the exact
contract and call order. A user hook class is used like a built-in::

    from csro.solvers.cfr import CFRSolver, Variant, ALGORITHMS
    base = ALGORITHMS["cfr+"](1000)
    solver = CFRSolver("kuhn_poker", Variant("mine", MyRegret(), base.policy, base.average))
    solver.run(1000); print(solver.exploitability())

Named variants, one module each (``ALGORITHMS[name](horizon)``): cfr (Zinkevich et al. 2007),
cfr+ (Tammelin 2014), lcfr and dcfr (Brown & Sandholm 2019), pcfr+ (Farina et al. 2021),
dpcfr+ (Xu et al. 2024), hs-pcfr+ (Zhang et al. 2024), vad-cfr and aod-cfr (Li et al. 2026,
from the printed source), wop-cfr (our documented interpretation of Li et al. v3).
"""

from csro.solvers.cfr._best_response import exploitability, nash_conv, openspiel_nash_conv
from csro.solvers.cfr._engine import CFRSolver
from csro.solvers.cfr._hooks import (
    InfosetBlock,
    PolicyAccumulator,
    PolicyFromRegretAccumulator,
    RegretAccumulator,
    Variant,
    normalize_rows,
    regret_matching,
)
from csro.solvers.cfr._policy import TreePolicy, policy_table
from csro.solvers.cfr._registry import ALGORITHMS, make_variant
from csro.solvers.cfr._solve import SolveConfig, SolveResult, log_checkpoints, solve
from csro.solvers.cfr._tree import GameTree, build_tree, load_game, load_tree

__all__ = [
    "ALGORITHMS",
    "CFRSolver",
    "GameTree",
    "InfosetBlock",
    "PolicyAccumulator",
    "PolicyFromRegretAccumulator",
    "RegretAccumulator",
    "SolveConfig",
    "SolveResult",
    "TreePolicy",
    "Variant",
    "build_tree",
    "exploitability",
    "load_game",
    "load_tree",
    "log_checkpoints",
    "make_variant",
    "nash_conv",
    "normalize_rows",
    "openspiel_nash_conv",
    "policy_table",
    "regret_matching",
    "solve",
]
