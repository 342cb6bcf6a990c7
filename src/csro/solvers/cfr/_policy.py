"""Policies over a ``GameTree``, usable wherever OpenSpiel takes a Python ``Policy``."""

from __future__ import annotations

import numpy as np
from open_spiel.python import policy as os_policy

from csro.solvers.cfr._tree import GameTree

__all__ = ["TreePolicy", "policy_table"]


def policy_table(tree: GameTree, policies) -> dict[str, list[tuple[int, float]]]:
    """``{info_state: [(action, prob), ...]}`` for every infoset of every player."""
    table = {}
    for pl, pol in zip(tree.players, policies):
        pol = np.asarray(pol, dtype=np.float64)
        for row, key in enumerate(pl.keys):
            k = int(pl.num_actions[row])
            table[key] = list(zip(pl.actions[row, :k].tolist(), pol[row, :k].tolist()))
    return table


class TreePolicy(os_policy.Policy):
    """A tabular policy: per player an ``(infosets, max_actions)`` array in tree row order.

    ``action_probabilities(state)`` looks the state's information-state string up, so the
    policy works with OpenSpiel's Python evaluators (``exploitability.nash_conv``,
    ``expected_game_score``) on ``tree.game``. ``to_dict`` gives the ``{info_state: [(action,
    prob)]}`` table that ``pyspiel.nash_conv`` accepts; ``to_tabular`` an OpenSpiel
    ``TabularPolicy`` (it enumerates every state, so only for small games).
    """

    def __init__(self, tree: GameTree, probabilities: list[np.ndarray]):
        super().__init__(tree.game, list(range(tree.num_players)))
        self.tree = tree
        self.probabilities = probabilities
        self._rows: list[dict[str, int]] | None = None

    def _row_of(self, player: int, key: str) -> int:
        if self._rows is None:
            self._rows = [{k: i for i, k in enumerate(pl.keys)} for pl in self.tree.players]
        return self._rows[player][key]

    def action_probabilities(self, state, player_id=None):
        player = state.current_player() if player_id is None else player_id
        row = self._row_of(player, state.information_state_string(player))
        pl = self.tree.players[player]
        k = int(pl.num_actions[row])
        return dict(zip(pl.actions[row, :k].tolist(), self.probabilities[player][row, :k].tolist()))

    def to_dict(self) -> dict[str, list[tuple[int, float]]]:
        return policy_table(self.tree, self.probabilities)

    def to_tabular(self) -> os_policy.TabularPolicy:
        tab = os_policy.TabularPolicy(self.game)
        for pl, probs in zip(self.tree.players, self.probabilities):
            for row, key in enumerate(pl.keys):
                idx = tab.state_lookup[key]
                k = int(pl.num_actions[row])
                tab.action_probability_array[idx, :] = 0.0
                tab.action_probability_array[idx, pl.actions[row, :k]] = probs[row, :k]
        return tab
