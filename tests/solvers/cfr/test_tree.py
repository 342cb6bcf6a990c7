import numpy as np
import pyspiel
import pytest

from csro.errors import GameError
from csro.solvers.cfr import build_tree, load_game, load_tree


def test_kuhn_sizes_and_layout():
    tree = load_tree("kuhn_poker")
    # Kuhn poker: 58 histories, 30 terminal, 12 information sets (6 per player).
    assert tree.num_nodes == 58 and len(tree.terminals) == 30 and tree.num_infosets == 12
    assert tree.parent[0] == -1 and tree.kind[0] == tree.chance
    for lv in tree.levels:  # children are contiguous, grouped by parent in order
        par = tree.parent[lv.child_start:lv.child_stop]
        assert np.all(np.diff(par) >= 0)
        assert np.array_equal(np.unique(par), lv.parents)
        assert np.array_equal(lv.parents[lv.labels], par)
    # the first deal's outcomes have probabilities summing to 1, and so do the full deals
    first = tree.levels[0]
    assert tree.chance_prob[first.child_start:first.child_stop].sum() == pytest.approx(1.0)
    deals = tree.kind == 0
    assert tree.chance_reach[deals & (tree.edge_owner == tree.chance)].sum() == pytest.approx(1.0)
    assert tree.level_aligned


def test_canonical_infoset_order_is_openspiel_cfr_discovery_order():
    from open_spiel.python.algorithms import cfr

    tree = load_tree("leduc_poker")
    ref = list(cfr.CFRSolver(tree.game)._info_state_nodes)
    ours = [k for k in ref if k in set(tree.players[0].keys)]
    assert list(tree.players[0].keys) == ours


def test_load_tree_caches_per_game_string():
    assert load_tree("kuhn_poker") is load_tree("kuhn_poker")
    assert build_tree("kuhn_poker") is not load_tree("kuhn_poker")


def test_simultaneous_game_is_made_turn_based():
    game = load_game("goofspiel(num_cards=3)")
    assert game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    tree = load_tree("goofspiel(num_cards=3)")
    assert tree.num_nodes == 418 and tree.num_infosets == 114


@pytest.mark.parametrize("bad", ["leduc_pokr", "kuhn_poker(players=2", "", "battleship(loss_multiplier=1)"])
def test_bad_game_strings_raise_game_error(bad):
    with pytest.raises(GameError):
        load_game(bad)


def test_game_without_information_states_is_rejected():
    with pytest.raises(GameError, match="information-state"):
        load_game("2048")
