"""The vectorised CFR engine: alternating updates, exact traversal, hooks per player block.

One iteration t, for each player p = 0..N-1 in turn (OpenSpiel's alternating updates):

1. Backward pass: the expected return of p at every node under the current policies,
   level by level from the deepest (children are slices; ``np.bincount`` sums them).
2. Reaches at p's decision nodes: chance reach (fixed) times every other player's own
   reach, a gather per player (``GameTree.seq``). p's own reach likewise.
3. Instantaneous regrets ``r(I, a) = sum_{h in I} pi_{-p}(h) (v(ha) - v(h))`` and the reach
   sums, by ``np.bincount`` over p's edges and nodes.
4. The three hooks (``csro.solvers.cfr._hooks``) update p's cumulative regret, cumulative
   policy and current policy; p's edge probabilities and own reaches are refreshed
   so the next player's traversal sees p's new policy.

With the CFR and CFR+ hooks this reproduces OpenSpiel's ``CFRSolver`` / ``CFRPlusSolver``
iterate for iterate (tests/solvers/cfr/test_exactness.py checks 1e-9).
"""

from __future__ import annotations

import numpy as np

from csro.errors import ConfigError
from csro.solvers.cfr._best_response import nash_conv as _nash_conv
from csro.solvers.cfr._hooks import InfosetBlock, Variant, normalize_rows
from csro.solvers.cfr._policy import TreePolicy
from csro.solvers.cfr._sweeps import backward_values, own_reach
from csro.solvers.cfr._tree import GameTree, load_tree

__all__ = ["CFRSolver"]


class CFRSolver:
    """Tabular CFR over a ``GameTree`` with a ``Variant``'s three hooks.

    Args:
      game: an OpenSpiel game string (its tree is built once and cached) or a ``GameTree``.
      variant: the hooks; see ``csro.solvers.cfr.ALGORITHMS`` for the named ones.
      check_hooks: validate hook outputs (shape always; finiteness, sign and normalisation of
        the returned policy on the first iteration), raising ConfigError on a bad hook.
    """

    def __init__(self, game: str | GameTree, variant: Variant, *, check_hooks: bool = True):
        self.tree = load_tree(game) if isinstance(game, str) else game
        self.variant = variant
        self.iteration = 0
        self._check = check_hooks
        tree = self.tree
        n, n_players = tree.num_nodes, tree.num_players
        self._eprob = tree.chance_prob.copy()
        self._values = np.zeros((n_players, n))
        self._values[:, tree.terminals] = tree.utilities.T
        self._buf = np.empty(n)
        self._blocks: list[InfosetBlock] = []
        self._policy: list[np.ndarray] = []
        self._own_reach: list[np.ndarray] = []
        for pl in tree.players:
            shape = pl.actions.shape
            self._blocks.append(
                InfosetBlock(
                    player=pl.player,
                    legal=_readonly(pl.legal),
                    num_actions=_readonly(pl.num_actions),
                    cumulative_regret=np.zeros(shape),
                    cumulative_policy=np.zeros(shape),
                    keys=pl.keys,
                )
            )
            self._policy.append(pl.legal / pl.num_actions[:, None])
            self._own_reach.append(np.empty(pl.num_edges + 1))
        self._cf_chance = [tree.chance_reach[pl.nodes] for pl in tree.players]
        for p in range(n_players):
            self._install(p)

    # --- iteration ---------------------------------------------------------------------------

    def step(self) -> None:
        """Run one iteration (every player updated once, in order)."""
        for p in range(self.tree.num_players):
            self._update_player(p)
        self.iteration += 1

    def run(self, iterations: int, callback=None) -> None:
        """Run ``iterations`` more iterations; ``callback(solver)`` after each one."""
        if iterations < 0:
            raise ConfigError(f"iterations must be >= 0, got {iterations}")
        for _ in range(iterations):
            self.step()
            if callback is not None:
                callback(self)

    def _update_player(self, p: int) -> None:
        tree, t = self.tree, self.iteration
        pl = tree.players[p]
        v = backward_values(tree, self._eprob, self._values[p], self._buf)
        seq = tree.seq[p]
        cf = self._cf_chance[p].copy()
        for q in range(tree.num_players):
            if q != p:
                cf *= self._own_reach[q][seq[q]]
        own = self._own_reach[p][seq[p]]
        size = pl.num_infosets * pl.max_actions
        gain = v[pl.edge_child] - v[pl.edge_parent_node]
        gain *= cf[pl.edge_parent]
        regrets = np.bincount(pl.edge_sa, weights=gain, minlength=size).reshape(pl.actions.shape)
        reach = np.bincount(pl.node_infoset, weights=own, minlength=pl.num_infosets)
        cf_reach = np.bincount(pl.node_infoset, weights=cf, minlength=pl.num_infosets)
        for arr in (regrets, reach, cf_reach):
            arr.setflags(write=False)
        policy = self._policy[p]
        policy.setflags(write=False)

        block = self._blocks[p]
        hooks = self.variant
        new_regret = hooks.regret.update_accumulate_regret(block, t, regrets)
        block.cumulative_regret = self._checked(new_regret, block, "update_accumulate_regret")
        new_avg = hooks.average.update_accumulate_policy(
            block, t, policy, regrets, reach, cf_reach
        )
        block.cumulative_policy = self._checked(new_avg, block, "update_accumulate_policy")
        new_policy = hooks.policy.get_updated_current_policy(block, t, regrets, policy)
        new_policy = self._checked(new_policy, block, "get_updated_current_policy")
        if self._check and t == 0:
            _check_policy(new_policy, pl.legal, hooks.policy)
        self._policy[p] = np.array(new_policy, dtype=np.float64)  # own, writable copy
        self._install(p)

    def _install(self, p: int) -> None:
        """Push player p's current policy into the edge probabilities and own reaches."""
        pl = self.tree.players[p]
        policy = self._policy[p]
        self._eprob[pl.edge_child] = policy.ravel()[pl.edge_sa]
        own_reach(pl, policy, out=self._own_reach[p])

    def _checked(self, arr, block: InfosetBlock, method: str) -> np.ndarray:
        if not isinstance(arr, np.ndarray) or arr.shape != block.shape:
            got = getattr(arr, "shape", type(arr).__name__)
            raise ConfigError(
                f"CFR hook {method} of variant {self.variant.name!r} returned {got}; "
                f"expected an array of shape {block.shape}"
            )
        return arr

    # --- results -----------------------------------------------------------------------------

    def average_policy_arrays(self) -> list[np.ndarray]:
        """Per player ``(n, A)``: the normalised cumulative policy (uniform where it is 0)."""
        return [
            normalize_rows(np.asarray(b.cumulative_policy, dtype=np.float64), b.legal)
            for b in self._blocks
        ]

    def current_policy_arrays(self) -> list[np.ndarray]:
        """Per player ``(n, A)``: the current policy (the one the next iteration uses)."""
        return [p.copy() for p in self._policy]

    def average_policy(self) -> TreePolicy:
        """The average policy as an OpenSpiel-compatible ``Policy``."""
        return TreePolicy(self.tree, self.average_policy_arrays())

    def current_policy(self) -> TreePolicy:
        """The current policy as an OpenSpiel-compatible ``Policy``."""
        return TreePolicy(self.tree, self.current_policy_arrays())

    def nash_conv(self) -> float:
        """NashConv of the average policy: sum over players of best-response gain."""
        return _nash_conv(self.tree, self.average_policy_arrays())

    def exploitability(self) -> float:
        """NashConv / number of players (OpenSpiel's convention)."""
        return self.nash_conv() / self.tree.num_players

    @property
    def blocks(self) -> tuple[InfosetBlock, ...]:
        """The per-player hook state (cumulative regret and policy); read, do not modify."""
        return tuple(self._blocks)


def _readonly(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.setflags(write=False)
    return view


def _check_policy(policy: np.ndarray, legal: np.ndarray, hook) -> None:
    name = type(hook).__name__
    if not np.all(np.isfinite(policy)) or (policy < 0).any():
        raise ConfigError(f"CFR policy hook {name} returned negative or non-finite entries")
    if (policy[~legal] != 0).any():
        raise ConfigError(f"CFR policy hook {name} put probability on padding (illegal) slots")
    if not np.allclose(policy.sum(axis=1), 1.0, atol=1e-9):
        raise ConfigError(f"CFR policy hook {name} returned rows that do not sum to 1")
