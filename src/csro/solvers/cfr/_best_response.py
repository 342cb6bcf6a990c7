"""Exact NashConv of a tabular policy over the flat tree, by vectorised best responses.

For each player p, a backward pass over the levels where, at the depth of each of p's
infosets, the action values ``Q(I, a) = sum_{h in I} pi_{-p}(h) v(ha)`` are summed with one
``np.bincount`` and p's edge probabilities are replaced by the indicator of the arg-max
(a pure best response); other nodes average their children as usual. This needs every
infoset's histories at one depth (``GameTree.level_aligned``; true of every game in the
suite). Otherwise, and for cross-checks, ``openspiel_nash_conv`` asks OpenSpiel's C++
``pyspiel.nash_conv``. The two agree to 1e-9 (tests/solvers/cfr/test_best_response.py).
"""

from __future__ import annotations

import numpy as np
import pyspiel

from csro.solvers.cfr._policy import policy_table
from csro.solvers.cfr._sweeps import backward_values, own_reach
from csro.solvers.cfr._tree import GameTree

__all__ = ["nash_conv", "exploitability", "best_response_values", "policy_values", "openspiel_nash_conv"]


def _edge_probs(tree: GameTree, policies) -> np.ndarray:
    eprob = tree.chance_prob.copy()
    for pl, pol in zip(tree.players, policies):
        eprob[pl.edge_child] = np.asarray(pol, dtype=np.float64).ravel()[pl.edge_sa]
    return eprob


def policy_values(tree: GameTree, policies) -> np.ndarray:
    """Expected return of every player at the root when all play ``policies``."""
    n = tree.num_nodes
    values = np.zeros((n, tree.num_players))
    values[tree.terminals] = tree.utilities
    backward_values(tree, _edge_probs(tree, policies), values, np.empty(n))
    return values[0].copy()


def best_response_values(tree: GameTree, policies) -> np.ndarray:
    """For each player p, the value of a best response of p to the others' ``policies``."""
    if not tree.level_aligned:
        raise ValueError("vectorised best response needs level-aligned infosets")
    eprob = _edge_probs(tree, policies)
    reach_q = [own_reach(pl, np.asarray(pol, dtype=np.float64))
               for pl, pol in zip(tree.players, policies)]
    out = np.empty(tree.num_players)
    buf = np.empty(tree.num_nodes)
    for p, pl in enumerate(tree.players):
        cf = tree.chance_reach[pl.nodes].copy()
        for q in range(tree.num_players):
            if q != p:
                cf *= reach_q[q][tree.seq[p][q]]
        width = pl.max_actions
        size = pl.num_infosets * width
        v = np.zeros(tree.num_nodes)
        v[tree.terminals] = tree.utilities[:, p]
        ep = eprob.copy()
        illegal = ~pl.legal
        for d in range(len(tree.levels) - 1, -1, -1):
            lv = tree.levels[d]
            a, b = pl.level_edges[d]
            if b > a:
                child = pl.edge_child[a:b]
                sa = pl.edge_sa[a:b]
                q_val = np.bincount(sa, weights=cf[pl.edge_parent[a:b]] * v[child],
                                    minlength=size).reshape(pl.num_infosets, width)
                q_val[illegal] = -np.inf
                best = np.argmax(q_val, axis=1)
                ep[child] = (sa % width == best[sa // width]).astype(np.float64)
            sl = slice(lv.child_start, lv.child_stop)
            np.multiply(v[sl], ep[sl], out=buf[sl])
            v[lv.parents] = np.bincount(lv.labels, weights=buf[sl], minlength=len(lv.parents))
        out[p] = v[0]
    return out


def openspiel_nash_conv(tree: GameTree, policies) -> float:
    """NashConv computed by OpenSpiel's C++ ``pyspiel.nash_conv`` (the reference)."""
    return float(pyspiel.nash_conv(tree.game, policy_table(tree, policies)))


def nash_conv(tree: GameTree, policies) -> float:
    """NashConv = sum_p (best-response value_p - value_p) of the profile ``policies``."""
    if not tree.level_aligned:
        return openspiel_nash_conv(tree, policies)
    gains = best_response_values(tree, policies) - policy_values(tree, policies)
    return float(gains.sum())


def exploitability(tree: GameTree, policies) -> float:
    """NashConv / number of players (OpenSpiel's convention)."""
    return nash_conv(tree, policies) / tree.num_players
