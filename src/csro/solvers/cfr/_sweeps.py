"""The two sweeps over a ``GameTree`` that both the CFR engine and the exact best response
make: each player's own reach probabilities (a forward pass over its edges) and the expected
values under given edge probabilities (a backward pass, level by level, children summed
with ``np.bincount``). The CFR engine (``_engine``) runs them every iteration; the best
response (``_best_response``) once per evaluation.
"""

from __future__ import annotations

import numpy as np

from csro.solvers.cfr._tree import GameTree

__all__ = ["own_reach", "backward_values"]


def own_reach(pl, policy: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """One player's own reach probability at each of its edges (the product of its action
    probabilities on the path, that edge included); the last entry ("no own edge yet") is 1."""
    if out is None:
        out = np.empty(pl.num_edges + 1)
    out[-1] = 1.0
    prob = policy.ravel()[pl.reach_sa]
    prev = pl.reach_prev
    for a, b in pl.reach_groups:
        np.multiply(out[prev[a:b]], prob[a:b], out=out[a:b])
    return out


def backward_values(tree: GameTree, eprob: np.ndarray, values: np.ndarray, buf: np.ndarray):
    """Fill ``values`` (one column per player, or one vector) at every non-terminal node with
    the expected return under edge probabilities ``eprob``; terminal entries must be set."""
    if values.ndim == 2:
        for col in range(values.shape[1]):
            column = np.ascontiguousarray(values[:, col])
            backward_values(tree, eprob, column, buf)
            values[:, col] = column
        return values
    for lv in reversed(tree.levels):
        sl = slice(lv.child_start, lv.child_stop)
        np.multiply(values[sl], eprob[sl], out=buf[sl])
        values[lv.parents] = np.bincount(lv.labels, weights=buf[sl], minlength=len(lv.parents))
    return values
