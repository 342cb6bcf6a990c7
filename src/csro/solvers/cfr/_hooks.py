"""The three hooks every CFR variant is made of, vectorised over a player's infosets.

The paper's search space (arXiv 2602.16928, Listing 1) calls three methods per information
set. Here each call receives *all* information sets of the player being updated at once, as
2-D arrays with one row per infoset (canonical order, see ``csro.solvers.cfr._tree``) and one
column per legal-action slot; columns past an infoset's action count are padding, always 0 on
input, and must stay 0 on output.

Per iteration t (0-based) and per player p in turn (alternating updates), the engine:

1. traverses the tree under the current policies and computes, for p's infosets, the
   instantaneous counterfactual regrets ``regrets`` (raw, not reach-normalised), the own
   reach ``reach`` and the counterfactual reach ``cf_reach`` (each summed over the infoset's
   histories, as OpenSpiel's CFR accumulates them);
2. ``R = regret.update_accumulate_regret(block, t, regrets)`` with
   ``block.cumulative_regret`` still the old value; the engine then stores R;
3. ``S = average.update_accumulate_policy(block, t, policy, regrets, reach, cf_reach)``
   where ``policy`` is the policy this traversal used; the engine stores S;
4. ``sigma = policy.get_updated_current_policy(block, t, regrets, policy)`` with
   ``block.cumulative_regret`` already R; sigma is p's policy from now on.

A hook may keep state between calls (per player: key it by ``block.player``). It may modify
the arrays it is given in place and return them. The average policy is S normalised per row
(uniform over the legal actions where a row sums to 0, as in OpenSpiel).
"""

from __future__ import annotations

import abc
import dataclasses

import numpy as np

__all__ = [
    "InfosetBlock",
    "RegretAccumulator",
    "PolicyFromRegretAccumulator",
    "PolicyAccumulator",
    "Variant",
    "regret_matching",
    "normalize_rows",
    "max_abs_regret",
]


@dataclasses.dataclass(eq=False)
class InfosetBlock:
    """All information sets of one player, as the hooks see them.

    Attributes:
      player: the player these infosets belong to.
      legal: bool ``(n, A)``; True on the slots of legal actions.
      num_actions: int ``(n,)``; legal actions per infoset.
      cumulative_regret: float ``(n, A)``; the engine's stored cumulative regret.
      cumulative_policy: float ``(n, A)``; the engine's stored cumulative (average) policy.
      keys: the information-state strings, row order (for hooks that want names).
    """

    player: int
    legal: np.ndarray
    num_actions: np.ndarray
    cumulative_regret: np.ndarray
    cumulative_policy: np.ndarray
    keys: tuple[str, ...]

    @property
    def shape(self) -> tuple[int, int]:
        return self.legal.shape


class RegretAccumulator(abc.ABC):
    """How instantaneous regrets enter the cumulative regret."""

    @abc.abstractmethod
    def update_accumulate_regret(
        self, block: InfosetBlock, t: int, regrets: np.ndarray
    ) -> np.ndarray:
        """Return the new cumulative regret, shape ``block.shape``.

        Args:
          block: the player's infosets; ``block.cumulative_regret`` is the value before
            this iteration.
          t: the iteration, 0-based.
          regrets: instantaneous counterfactual regrets ``(n, A)``, 0 on padding.
        """


class PolicyFromRegretAccumulator(abc.ABC):
    """How the next current policy is derived from the (updated) cumulative regret."""

    @abc.abstractmethod
    def get_updated_current_policy(
        self, block: InfosetBlock, t: int, regrets: np.ndarray, previous_policy: np.ndarray
    ) -> np.ndarray:
        """Return the next current policy ``(n, A)``: rows non-negative, summing to 1 over
        the legal slots, 0 on padding.

        Args:
          block: ``block.cumulative_regret`` already includes this iteration's update.
          t: the iteration, 0-based.
          regrets: this iteration's instantaneous regrets ``(n, A)``.
          previous_policy: the policy used in this iteration's traversal ``(n, A)``.
        """


class PolicyAccumulator(abc.ABC):
    """How the current policy enters the average (cumulative) policy."""

    @abc.abstractmethod
    def update_accumulate_policy(
        self,
        block: InfosetBlock,
        t: int,
        policy: np.ndarray,
        regrets: np.ndarray,
        reach: np.ndarray,
        cf_reach: np.ndarray,
    ) -> np.ndarray:
        """Return the new cumulative policy, shape ``block.shape``, 0 on padding.

        Args:
          block: ``block.cumulative_policy`` is the value before this iteration;
            ``block.cumulative_regret`` already includes this iteration's update.
          t: the iteration, 0-based.
          policy: the policy used in this iteration's traversal ``(n, A)``.
          regrets: this iteration's instantaneous regrets ``(n, A)``.
          reach: ``(n,)`` the player's own reach probability, summed over the infoset's
            histories (OpenSpiel's accumulation weight).
          cf_reach: ``(n,)`` the others' and chance's reach, summed over the histories.
        """


@dataclasses.dataclass(frozen=True)
class Variant:
    """A CFR variant: a name and one instance of each hook (instances carry state, so a
    ``Variant`` drives one solver run; build a fresh one per run from its factory)."""

    name: str
    regret: RegretAccumulator
    policy: PolicyFromRegretAccumulator
    average: PolicyAccumulator


# --- helpers shared by the variants ---------------------------------------------------------


def normalize_rows(weights: np.ndarray, legal: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """Rows of non-negative ``weights`` normalised to sum 1; rows whose sum is not above
    ``threshold`` become uniform over their legal slots."""
    total = weights.sum(axis=1, keepdims=True)
    ok = total > threshold
    uniform = legal / legal.sum(axis=1, keepdims=True)
    return np.where(ok, weights / np.where(ok, total, 1.0), uniform)


def regret_matching(cumulative_regret: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Regret matching: sigma proportional to the positive part, uniform if none is positive."""
    return normalize_rows(np.maximum(cumulative_regret, 0.0), legal)


def max_abs_regret(regrets: np.ndarray) -> np.ndarray:
    """``m = max_a |r_a|`` per infoset (padding is 0, so it never wins)."""
    return np.abs(regrets).max(axis=1)
