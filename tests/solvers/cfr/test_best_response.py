"""Our vectorised NashConv equals OpenSpiel's (C++ ``pyspiel.nash_conv`` and the Python
``exploitability.nash_conv``) to 1e-9."""

import numpy as np
import pytest
from open_spiel.python.algorithms import exploitability as os_exploitability

from csro.solvers.cfr import TreePolicy, load_tree, nash_conv, normalize_rows, openspiel_nash_conv

GAMES = [
    "kuhn_poker",
    "kuhn_poker(players=3)",
    "leduc_poker",
    "goofspiel(num_cards=3)",
    "liars_dice(dice_sides=3)",
    "blotto(coins=4,fields=3)",
    "battleship(board_width=2,board_height=2,ship_sizes=[1],ship_values=[1.0],num_shots=2)",
]


def _random_profile(tree, seed):
    rng = np.random.default_rng(seed)
    return [normalize_rows(rng.random(pl.actions.shape) ** 3 * pl.legal, pl.legal)
            for pl in tree.players]


def test_kuhn_uniform_nash_conv_known_value():
    # Uniform random play in Kuhn poker: NashConv 11/12 (OpenSpiel exploitability_test.py).
    tree = load_tree("kuhn_poker")
    uniform = [pl.legal / pl.num_actions[:, None] for pl in tree.players]
    assert nash_conv(tree, uniform) == pytest.approx(11 / 12, abs=1e-12)


@pytest.mark.integration
@pytest.mark.parametrize("game", GAMES)
def test_nash_conv_equals_openspiel(game):
    tree = load_tree(game)
    for seed in range(3):
        profile = _random_profile(tree, seed)
        assert nash_conv(tree, profile) == pytest.approx(openspiel_nash_conv(tree, profile), abs=1e-9)


@pytest.mark.integration
def test_tree_policy_works_with_openspiel_python_evaluators():
    tree = load_tree("leduc_poker")
    profile = _random_profile(tree, 7)
    pol = TreePolicy(tree, profile)
    assert os_exploitability.nash_conv(tree.game, pol) == pytest.approx(nash_conv(tree, profile), abs=1e-9)
    tab = pol.to_tabular()
    assert os_exploitability.nash_conv(tree.game, tab) == pytest.approx(nash_conv(tree, profile), abs=1e-9)
