"""Every named variant runs and drives exploitability down on Kuhn poker."""

import pytest

from csro.solvers.cfr import ALGORITHMS, CFRSolver, load_tree, make_variant

# Kuhn poker's uniform-random profile has NashConv 11/12 (known value; see
# test_best_response.py), i.e. exploitability 0.4583.
UNIFORM_EXPL = 11 / 24


@pytest.mark.parametrize("algo", list(ALGORITHMS))
def test_variant_decreases_exploitability_on_kuhn(algo):
    horizon = 600  # past VAD-CFR's 500-iteration warm start and WOP-CFR's half horizon
    solver = CFRSolver(load_tree("kuhn_poker"), make_variant(algo, horizon))
    solver.run(horizon)
    final = solver.exploitability()
    assert final < UNIFORM_EXPL / 50, f"{algo}: {final}"


@pytest.mark.parametrize("algo", ["cfr+", "pcfr+", "vad-cfr", "dpcfr+"])
def test_three_player_kuhn_runs(algo):
    solver = CFRSolver(load_tree("kuhn_poker(players=3)"), make_variant(algo, 600))
    solver.run(600)
    assert solver.exploitability() < 5e-3


@pytest.mark.parametrize("algo", ["cfr", "dcfr", "pcfr+", "aod-cfr"])
def test_simultaneous_goofspiel_converges(algo):
    solver = CFRSolver(load_tree("goofspiel(num_cards=3)"), make_variant(algo, 200))
    start = solver.exploitability()
    solver.run(200)
    assert solver.exploitability() < start / 10


def test_wop_warm_start_follows_the_horizon():
    solver = CFRSolver(load_tree("kuhn_poker"), make_variant("wop-cfr", 100))
    solver.run(49)
    assert not any(b.cumulative_policy.any() for b in solver.blocks)
    solver.run(1)  # iteration t = 49 < 50: still nothing
    assert not any(b.cumulative_policy.any() for b in solver.blocks)
    solver.run(1)  # t = 50: first accumulation
    assert all(b.cumulative_policy.any() for b in solver.blocks)


def test_hs_pcfr_schedule_starts_at_30_and_drops_by_5_over_the_horizon():
    variant = make_variant("hs-pcfr+", 1000)
    assert variant.average.gamma(0) == 30.0
    assert variant.average.gamma(500) == 27.5
    assert variant.average.gamma(999) == pytest.approx(25.005)
