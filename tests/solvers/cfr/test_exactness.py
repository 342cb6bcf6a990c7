"""Our CFR / CFR+ / DCFR / LCFR iterate exactly as OpenSpiel's solvers (to 1e-9).

References: ``pyspiel.CFRSolver`` and ``pyspiel.CFRPlusSolver`` (C++), and the Python
``open_spiel.python.algorithms.discounted_cfr`` DCFR / LCFR solvers, all with alternating
updates as ours.
"""

import pyspiel
import pytest
from open_spiel.python.algorithms import discounted_cfr

from csro.solvers.cfr import CFRSolver, load_tree, make_variant

TOL = 1e-9


def _max_policy_gap(tree, ours, lookup):
    """Largest |ours - reference| over every (infoset, legal action)."""
    gap = 0.0
    for pl, probs in zip(tree.players, ours):
        for row, key in enumerate(pl.keys):
            ref = lookup(key)
            for j in range(int(pl.num_actions[row])):
                gap = max(gap, abs(ref[int(pl.actions[row, j])] - probs[row, j]))
    return gap


@pytest.mark.integration
@pytest.mark.parametrize(
    "game, checks",
    [
        ("kuhn_poker", (1, 2, 3, 5, 10, 50)),
        ("leduc_poker", tuple(range(1, 11)) + (50,)),
    ],
)
@pytest.mark.parametrize("algo, reference", [("cfr", pyspiel.CFRSolver),
                                             ("cfr+", pyspiel.CFRPlusSolver)])
def test_average_policy_and_nash_conv_equal_openspiel(game, checks, algo, reference):
    tree = load_tree(game)
    ours = CFRSolver(tree, make_variant(algo, max(checks)))
    ref = reference(tree.game)
    for it in range(1, max(checks) + 1):
        ours.step()
        ref.evaluate_and_update_policy()
        if it not in checks:
            continue
        ref_avg = ref.average_policy()
        gap = _max_policy_gap(tree, ours.average_policy_arrays(),
                              lambda key: dict(ref_avg.get_state_policy(key)))
        assert gap < TOL, f"{algo} {game} iteration {it}: policy gap {gap}"
        ref_nc = pyspiel.nash_conv(tree.game, ref_avg)
        assert ours.nash_conv() == pytest.approx(ref_nc, abs=TOL), f"iteration {it}"


@pytest.mark.integration
@pytest.mark.parametrize("algo, reference", [("dcfr", discounted_cfr.DCFRSolver),
                                             ("lcfr", discounted_cfr.LCFRSolver)])
def test_discounted_variants_equal_openspiel_python(algo, reference):
    tree = load_tree("kuhn_poker")
    ours = CFRSolver(tree, make_variant(algo, 30))
    ref = reference(tree.game)
    for it in range(1, 31):
        ours.step()
        ref.evaluate_and_update_policy()
        if it in (1, 2, 5, 30):
            ref_avg = ref.average_policy()
            gap = _max_policy_gap(tree, ours.average_policy_arrays(), ref_avg.policy_for_key)
            assert gap < TOL, f"{algo} iteration {it}: policy gap {gap}"


@pytest.mark.integration
def test_three_player_and_simultaneous_games_match_openspiel_cfr_plus():
    for game in ("kuhn_poker(players=3)", "goofspiel(num_cards=3)"):
        tree = load_tree(game)
        ours = CFRSolver(tree, make_variant("cfr+", 20))
        ref = pyspiel.CFRPlusSolver(tree.game)
        for _ in range(20):
            ours.step()
            ref.evaluate_and_update_policy()
        ref_avg = ref.average_policy()
        gap = _max_policy_gap(tree, ours.average_policy_arrays(),
                              lambda key: dict(ref_avg.get_state_policy(key)))
        assert gap < TOL, game
        assert ours.nash_conv() == pytest.approx(pyspiel.nash_conv(tree.game, ref_avg), abs=TOL)
