"""Joint (correlated) meta-strategies: what an oracle best-responds to, and equilibrium gaps.

A *joint* sigma is one distribution over the meta-game's pure profiles, an array with the
meta-game's shape: ``joint[i_0, ..., i_{N-1}]`` = probability that every player q plays
its population member ``i_q``. Correlated (CE) and coarse-correlated (CCE) equilibria are
joint; Nash and the other solvers give a *product* sigma (one vector per player), whose
joint is ``product_joint(sigmas)``.

What player i's oracle best-responds to (JPSRO, Marris, Muller, Lanctot, Tuyls, Graepel,
"Multi-Agent Training beyond Zero-Sum with Correlated Equilibrium Meta-Solvers", ICML 2021,
arXiv 2106.09435):

- **CCE**: one target, the others' joint marginal ``others_marginal(joint, i)`` — the
  distribution of the other players' profile when i ignores the recommendation. A CCE is
  exactly a joint from which no fixed strategy gains against this marginal.
- **CE**: one target per recommendation. ``recommendation_conditionals(joint, i)`` gives
  ``P(a_i)`` and ``P(a_{-i} | a_i)``; a new best response to the conditional of each
  recommended ``a_i`` is a candidate deviation for that recommendation (JPSRO(CE) adds the
  best responses for every recommendation with positive probability). For a product joint
  every conditional equals the others' marginal, the usual PSRO target.

Gaps (zero exactly at the equilibrium; each term is a deviation gain, so never negative):

- ``cce_gap``: sum over players of ``max(0, max_a' E_joint[u_i(a', a_{-i}) - u_i(a)])``.
- ``ce_gap``: sum over players and recommendations ``a_i`` of the best swap gain
  ``max_a' sum_{a_{-i}} joint(a_i, a_{-i}) (u_i(a', a_{-i}) - u_i(a_i, a_{-i}))``: the gain
  of player i's best deviation *function* (the JPSRO "CE gap").
- ``meta_gap(payoffs, sigma, concept)``: the one gap the report plots per iteration —
  NashConv of a product sigma (``meta_nash_conv``), or the CE / CCE gap of a joint sigma.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from csro.solvers.meta._base import PayoffsLike, as_payoff_tensors, meta_nash_conv

CONCEPTS = ("nash", "ce", "cce")


def as_joint(joint: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """``joint`` as a float64 array of ``shape``; ValueError unless it is a distribution."""
    j = np.asarray(joint, dtype=np.float64)
    if j.shape != tuple(shape):
        raise ValueError(f"joint sigma has shape {j.shape}, the meta-game {tuple(shape)}")
    if not np.all(np.isfinite(j)) or j.min() < -1e-12 or abs(j.sum() - 1.0) > 1e-9:
        raise ValueError("joint sigma must be non-negative and sum to 1")
    return j


def product_joint(sigmas: Sequence[np.ndarray]) -> np.ndarray:
    """The joint distribution of independent per-player sigmas (outer product)."""
    out = np.ones(())
    for s in sigmas:
        out = np.multiply.outer(out, np.asarray(s, dtype=np.float64))
    return out


def joint_marginals(joint: np.ndarray) -> list[np.ndarray]:
    """Each player's marginal of a joint sigma (the sigma of player p over its strategies)."""
    j = np.asarray(joint, dtype=np.float64)
    axes = range(j.ndim)
    return [j.sum(axis=tuple(q for q in axes if q != p)) for p in axes]


def others_marginal(joint: np.ndarray, player: int) -> np.ndarray:
    """The CCE oracle target: the distribution of the others' profile (player's axis summed out).

    Shape: the meta-game's shape without ``player``'s axis, the others in player order.
    """
    return np.asarray(joint, dtype=np.float64).sum(axis=player)


def recommendation_conditionals(joint: np.ndarray, player: int) -> tuple[np.ndarray, np.ndarray]:
    """The CE oracle targets of ``player``: ``(P(a_i), P(a_{-i} | a_i))``.

    Returns the recommendation probabilities (length n_i) and an array of shape
    ``(n_i, *others' shape)`` whose row ``a`` is the others' distribution given that ``a`` is
    recommended; rows of recommendations with probability 0 are all zero (no target).
    """
    moved = np.moveaxis(np.asarray(joint, dtype=np.float64), player, 0)
    p_rec = moved.reshape(len(moved), -1).sum(axis=1)
    cond = np.zeros_like(moved)
    live = p_rec > 0
    cond[live] = moved[live] / p_rec[live].reshape((-1,) + (1,) * (moved.ndim - 1))
    return p_rec, cond


def deviation_gains(tensor: np.ndarray, joint: np.ndarray, player: int) -> np.ndarray:
    """``G[a, a'] = sum_{a_{-i}} joint(a, a_{-i}) (u_i(a', a_{-i}) - u_i(a, a_{-i}))``.

    Player ``player``'s expected gain from playing ``a'`` whenever ``a`` is recommended,
    computed directly from the payoff tensor (``tensor`` is that player's payoffs).
    """
    n = tensor.shape[player]
    u = np.moveaxis(tensor, player, 0).reshape(n, -1)  # u[a, r]: r = the others' profile
    s = np.moveaxis(np.asarray(joint, dtype=np.float64), player, 0).reshape(n, -1)
    # sum_r s[a, r] u[a', r]  -  sum_r s[a, r] u[a, r]
    return s @ u.T - np.sum(s * u, axis=1)[:, None]


def ce_gap(payoffs: PayoffsLike, joint: np.ndarray) -> float:
    """Sum over players and recommendations of the best swap gain (0 iff ``joint`` is a CE)."""
    tensors = as_payoff_tensors(payoffs)
    j = as_joint(joint, tensors[0].shape)
    # max over a' includes a' = a (gain 0); the clip only removes round-off below it
    return float(sum(np.maximum(deviation_gains(t, j, p).max(axis=1), 0.0).sum() for p, t in enumerate(tensors)))


def player_regrets(payoffs: PayoffsLike, joint: np.ndarray) -> list[float]:
    """Each player's regret under ``joint``: what its best fixed member would gain over its
    expected payoff against the others' play (the coarse deviation; for a product sigma,
    the player's term of NashConv)."""
    tensors = as_payoff_tensors(payoffs)
    j = as_joint(joint, tensors[0].shape)
    return [float(max(0.0, deviation_gains(t, j, p).sum(axis=0).max())) for p, t in enumerate(tensors)]


def cce_gap(payoffs: PayoffsLike, joint: np.ndarray) -> float:
    """Sum over players of the best fixed-deviation gain (0 iff ``joint`` is a CCE)."""
    return float(sum(player_regrets(payoffs, joint)))


def meta_gap(payoffs: PayoffsLike, sigma: Sequence[np.ndarray] | np.ndarray, concept: str = "nash") -> float:
    """The meta-game gap of a solution: NashConv (product sigma) or CE / CCE gap (joint sigma).

    ``concept="nash"`` takes one sigma per player; ``"ce"`` and ``"cce"`` take a joint sigma
    (use ``product_joint`` to measure a product sigma against them).
    """
    if concept == "nash":
        return meta_nash_conv(payoffs, sigma)
    if concept == "ce":
        return ce_gap(payoffs, sigma)
    if concept == "cce":
        return cce_gap(payoffs, sigma)
    raise ValueError(f"unknown equilibrium concept {concept!r}; valid: {', '.join(CONCEPTS)}")
