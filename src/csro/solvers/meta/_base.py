"""The meta-solver interface and the normal-form helpers every meta-solver shares.

A *meta-game* (empirical game) is given as a list of N payoff tensors, one per player:
``payoffs[p][i_0, ..., i_{N-1}]`` is player p's payoff when each player q plays its pure
strategy (population member) ``i_q``. A single 2-D array ``A`` is accepted as shorthand for
the two-player zero-sum game in which the row player gets ``A[i, j]`` and the column player
gets ``-A[i, j]``; i.e. it is read as ``[A, -A]`` in the tensor convention above (seen from
the column player's own side, with its strategies as rows, its matrix is ``-A.T``).

A meta-solver returns one probability vector (sigma) per player: non-negative, summing to 1,
``len(sigma[p]) == payoffs[p].shape[p]``.
"""

from __future__ import annotations

import abc
from typing import ClassVar, Sequence, Union

import numpy as np

PayoffsLike = Union[np.ndarray, Sequence[np.ndarray]]


def as_payoff_tensors(payoffs: PayoffsLike) -> list[np.ndarray]:
    """Validate ``payoffs`` and return it as a list of float64 N-dimensional tensors.

    A single 2-D array ``A`` becomes ``[A, -A]`` (two-player zero-sum, row player's payoff).
    Raises ``ValueError`` for shapes that do not describe an N-player game.
    """
    if isinstance(payoffs, np.ndarray) and payoffs.ndim == 2:
        a = np.asarray(payoffs, dtype=np.float64)
        tensors = [a, -a]
    else:
        tensors = [np.asarray(t, dtype=np.float64) for t in payoffs]
    n = len(tensors)
    if n < 1:
        raise ValueError("payoffs: need one payoff tensor per player, got none")
    shape = tensors[0].shape
    if len(shape) != n:
        raise ValueError(
            f"payoffs: {n} players need {n}-dimensional tensors, got shape {shape}"
        )
    for p, t in enumerate(tensors):
        if t.shape != shape:
            raise ValueError(f"payoffs[{p}] has shape {t.shape}, payoffs[0] has {shape}")
        if not np.all(np.isfinite(t)):
            raise ValueError(f"payoffs[{p}] contains non-finite values")
    if any(s < 1 for s in shape):
        raise ValueError(f"payoffs: every player needs at least one strategy, shape {shape}")
    return tensors


def values_against(tensor: np.ndarray, sigmas: Sequence[np.ndarray], player: int) -> np.ndarray:
    """Expected payoff (from ``tensor``) of each pure strategy of ``player``.

    The other players q play ``sigmas[q]``; ``sigmas[player]`` is not used.
    """
    t = np.moveaxis(tensor, player, 0)
    others = [q for q in range(len(sigmas)) if q != player]
    # contract the last axis repeatedly: axes of t are (player, others in order)
    for q in reversed(others):
        t = t @ sigmas[q]
    return t


def expected_payoffs(payoffs: Sequence[np.ndarray], sigmas: Sequence[np.ndarray]) -> np.ndarray:
    """Each player's expected payoff under the independent mixed profile ``sigmas``."""
    return np.array(
        [float(values_against(payoffs[p], sigmas, p) @ sigmas[p]) for p in range(len(payoffs))]
    )


def meta_nash_conv(payoffs: PayoffsLike, sigmas: Sequence[np.ndarray]) -> float:
    """NashConv of ``sigmas`` in the meta-game: sum over players of best-deviation gain.

    Zero exactly at a Nash equilibrium; the usual measure of how far an approximate
    meta-solver is from equilibrium.
    """
    tensors = as_payoff_tensors(payoffs)
    sig = [np.asarray(s, dtype=np.float64) for s in sigmas]
    total = 0.0
    for p, t in enumerate(tensors):
        u = values_against(t, sig, p)
        total += float(np.max(u) - u @ sig[p])
    return total


def is_constant_sum(tensors: Sequence[np.ndarray], rtol: float = 1e-9) -> bool:
    """Whether the payoffs of all players sum to the same constant in every profile."""
    total = np.sum(tensors, axis=0)
    scale = max(1.0, max(float(np.max(np.abs(t))) for t in tensors))
    return bool(np.ptp(total) <= rtol * scale)


def uniform_profile(shape: Sequence[int]) -> list[np.ndarray]:
    """The uniform mixed strategy of every player."""
    return [np.full(n, 1.0 / n) for n in shape]


def clean_distribution(x: np.ndarray) -> np.ndarray:
    """Clip tiny negative round-off to 0 and renormalise (uniform if nothing is left)."""
    x = np.where(x > 0.0, x, 0.0).astype(np.float64)
    s = x.sum()
    if not np.isfinite(s) or s <= 0.0:
        return np.full(len(x), 1.0 / len(x))
    return x / s


class MetaSolver(abc.ABC):
    """A meta-strategy solver: ``solve(payoffs) -> [sigma_0, ..., sigma_{N-1}]``.

    Subclasses implement ``_solve`` on validated tensors; ``solve`` validates the input and
    cleans the output (each sigma non-negative, summing to 1). Solvers are dataclasses whose
    fields are their documented options; ``csro.solvers.meta.get_meta_solver`` builds them by
    name. Most are stateless; the SHOR-PSRO training solver counts its calls.
    """

    name: ClassVar[str]

    def solve(self, payoffs: PayoffsLike) -> list[np.ndarray]:
        """One sigma per player for the meta-game ``payoffs`` (see module docstring)."""
        tensors = as_payoff_tensors(payoffs)
        sigmas = self._solve(tensors)
        shape = tensors[0].shape
        out = []
        for p, s in enumerate(sigmas):
            s = np.asarray(s, dtype=np.float64).reshape(-1)
            assert s.shape == (shape[p],), (self.name, p, s.shape, shape)
            out.append(clean_distribution(s))
        return out

    @abc.abstractmethod
    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        """Solve validated payoff tensors; may return unnormalised non-negative weights."""


class JointMetaSolver(MetaSolver):
    """A meta-solver whose answer is a *joint* sigma over profiles (CE, CCE).

    ``solve_joint(payoffs)`` returns the joint distribution (an array of the meta-game's
    shape, see ``csro.solvers.meta._joint``); ``solve(payoffs)`` keeps the common interface
    and returns its per-player marginals, so a joint solver can stand wherever a product one
    does (the marginals of a CE are in general not a Nash equilibrium).
    """

    def solve_joint(self, payoffs: PayoffsLike) -> np.ndarray:
        """The joint sigma for ``payoffs``: non-negative, summing to 1, the meta-game's shape."""
        tensors = as_payoff_tensors(payoffs)
        joint = np.asarray(self._solve_joint(tensors), dtype=np.float64)
        assert joint.shape == tensors[0].shape, (self.name, joint.shape, tensors[0].shape)
        return clean_distribution(joint.reshape(-1)).reshape(joint.shape)

    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        joint = self.solve_joint(tensors)
        return [joint.sum(axis=tuple(q for q in range(joint.ndim) if q != p)) for p in range(joint.ndim)]

    @abc.abstractmethod
    def _solve_joint(self, tensors: list[np.ndarray]) -> np.ndarray:
        """Solve validated payoff tensors; may return unnormalised non-negative weights."""
