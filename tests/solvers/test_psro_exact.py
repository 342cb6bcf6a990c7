"""Tests of exact-oracle PSRO: sequence-form numbers against OpenSpiel, PSRO on poker."""

import json
import subprocess
import sys

import numpy as np
import pyspiel
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import (
    best_response,
    expected_game_score,
    exploitability,
    policy_aggregator,
)

from csro.errors import ConfigError, GameError
from csro.solvers.meta import NashSolver, get_meta_solver
from csro.solvers.psro_exact import ExactPSRO, SequenceTree, load_game, run_psro_exact

# NashConv of the uniform random policy: Kuhn 11/12 (exploitability 11/24, OpenSpiel's
# exploitability_test), 3-player Kuhn 2.0625 and Leduc 4.747222 (OpenSpiel's nash_conv).
KUHN_UNIFORM = 11 / 12


def _random_policy(tree: SequenceTree, player: int, rng: np.random.Generator) -> np.ndarray:
    pol = np.ones(tree.num_sequences[player])
    for s, k in zip(tree.start[player], tree.num_actions[player]):
        pol[s:s + k] = rng.dirichlet(np.ones(k))
    return pol


@pytest.fixture(scope="module")
def kuhn_psro():
    """An ExactPSRO on Kuhn with two extra random members per player, and their sigmas."""
    rng = np.random.default_rng(0)
    psro = ExactPSRO("kuhn_poker")
    for _ in range(2):
        psro.add_policies([_random_policy(psro.tree, p, rng) for p in range(2)])
    sigmas = [rng.dirichlet(np.ones(3)) for _ in range(2)]
    return psro, sigmas


def test_uniform_nash_conv_kuhn_exact():
    assert ExactPSRO("kuhn_poker").nash_conv([np.ones(1)] * 2) == pytest.approx(KUHN_UNIFORM, abs=1e-12)


def test_uniform_nash_conv_three_player_kuhn_and_leduc():
    assert ExactPSRO("kuhn_poker(players=3)").nash_conv([np.ones(1)] * 3) == pytest.approx(2.0625, abs=1e-12)
    assert ExactPSRO("leduc_poker").nash_conv([np.ones(1)] * 2) == pytest.approx(4.747222222222222, abs=1e-9)


def test_meta_game_cells_match_openspiel_policy_value(kuhn_psro):
    psro, _ = kuhn_psro
    game = psro.game
    root = game.new_initial_state()
    for i in range(3):
        for j in range(3):
            pol = psro.tree.to_tabular([psro.populations[0][i], psro.populations[1][j]])
            v = expected_game_score.policy_value(root, [pol, pol])
            assert psro.meta_game[0][i, j] == pytest.approx(v[0], abs=1e-12)
            assert psro.meta_game[1][i, j] == pytest.approx(v[1], abs=1e-12)


def test_incremental_meta_game_equals_full_recomputation(kuhn_psro):
    psro, _ = kuhn_psro
    full = psro._cells(psro._plans)
    for m, f in zip(psro.meta_game, full):
        np.testing.assert_allclose(m, f, atol=1e-14)


def test_mixture_policy_matches_policy_aggregator(kuhn_psro):
    psro, sigmas = kuhn_psro
    game = psro.game
    members = [[psro.tree.to_tabular([pol, pol]) for pol in psro.populations[p]] for p in range(2)]
    aggregated = policy_aggregator.PolicyAggregator(game).aggregate(
        [0, 1], members, [list(s) for s in sigmas])
    ours = psro.mixture_policy(sigmas)
    for p in range(2):
        for key, actions in zip(psro.tree.keys[p], psro.tree.actions[p]):
            theirs = aggregated.policy[p][key]
            for a in actions:
                assert ours.policy_for_key(key)[a] == pytest.approx(theirs.get(a, 0.0), abs=1e-12)
    # and the NashConv of that behaviour profile is what PSRO reports
    assert psro.nash_conv(sigmas) == pytest.approx(exploitability.nash_conv(game, ours), abs=1e-12)


def test_best_response_value_matches_openspiel(kuhn_psro):
    psro, sigmas = kuhn_psro
    mixture = psro.mixture_policy(sigmas)
    for p in range(2):
        br, value = psro.best_response(p, sigmas)
        expected = best_response.BestResponsePolicy(psro.game, p, mixture).value(
            psro.game.new_initial_state())
        assert value == pytest.approx(expected, abs=1e-12)
        assert set(np.unique(br)) <= {0.0, 1.0}  # pure


def test_psro_nash_kuhn_converges():
    result = run_psro_exact("kuhn_poker", train_solver="nash", eval_solver="nash", iterations=10)
    assert len(result.nash_conv) == 10
    assert result.nash_conv[0] == pytest.approx(KUHN_UNIFORM, abs=1e-9)
    # Measured: 0.9167 0.8333 0.3333 0.1833 0.2222 0.1354 then 0 from iteration 6 on.
    assert result.nash_conv[-1] < 1e-3
    assert [len(s) for s in result.sigmas] == [10, 10]
    assert result.meta_game[0].shape == (10, 10)


def test_psro_nash_leduc_improves():
    result = run_psro_exact("leduc_poker", iterations=30)
    # Measured (about 0.03 s per iteration): 4.747 6.833 4.601 5.835 ... 1.441 1.316; PSRO's
    # NashConv is not monotone, so only the level reached is asserted, with a margin.
    assert result.nash_conv[0] == pytest.approx(4.747222222222222, abs=1e-9)
    assert result.nash_conv[-1] < 2.0
    assert min(result.nash_conv[-10:]) < 1.6


def test_psro_three_player_kuhn_runs():
    nash = NashSolver(approx_steps=2000)
    result = run_psro_exact("kuhn_poker(players=3)", train_solver=nash, eval_solver=nash,
                            iterations=3)
    assert result.nash_conv[0] == pytest.approx(2.0625, abs=1e-9)
    assert result.nash_conv[-1] < result.nash_conv[0]
    assert result.meta_game[0].shape == (3, 3, 3)


def test_psro_leduc_and_stateful_solvers():
    seen = []
    result = run_psro_exact("leduc_poker", train_solver=get_meta_solver("shor"),
                            eval_solver="pm", iterations=3, callback=lambda t, v: seen.append(t))
    assert result.nash_conv[0] == pytest.approx(4.747222222222222, abs=1e-9)
    assert seen == [0, 1, 2]
    assert result.psro.populations[0][1].shape == (result.psro.tree.num_sequences[0],)


def test_simultaneous_game_is_made_turn_based():
    result = run_psro_exact("goofspiel(num_cards=3)", iterations=2)
    assert result.nash_conv[0] > 0


def test_errors():
    with pytest.raises(GameError, match="no_such_game"):
        load_game("no_such_game")
    with pytest.raises(ConfigError, match="valid:"):
        run_psro_exact("kuhn_poker", train_solver="lp")
    with pytest.raises(ConfigError):
        run_psro_exact("kuhn_poker", iterations=0)
    with pytest.raises(GameError, match="too large"):
        SequenceTree(pyspiel.load_game("leduc_poker"), max_histories=100)


# --- the ``csro psro-exact`` command, run as a user would (a subprocess) -----------------

CLI = [sys.executable, "-c", "from csro.cli import main; main()", "psro-exact"]


def _cli(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def test_cli_json():
    proc = _cli("--game", "kuhn_poker", "--train-solver", "nash", "--eval-solver", "nash",
                "--iterations", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["game"] == "kuhn_poker" and out["iterations"] == 4
    assert len(out["nash_conv"]) == 4
    assert out["nash_conv"][0] == pytest.approx(KUHN_UNIFORM, abs=1e-9)


def test_cli_table():
    proc = _cli("--game", "kuhn_poker", "--iterations", "2")
    assert proc.returncode == 0, proc.stderr
    assert "NashConv" in proc.stdout and "0.916667" in proc.stdout


@pytest.mark.parametrize("args, needle", [
    (("--game", "no_such_game"), "unknown game 'no_such_game'"),
    (("--game", "kuhn_poker(foo=1)"), "Unknown parameter 'foo'"),
    (("--train-solver", "lp"), "valid: alpharank, cce, ce, gambit, nash, pm, prd, rm, shor, shor-eval, uniform"),
    (("--eval-solver", "lp"), "unknown meta-solver 'lp'"),
    (("--iterations", "0"), "iterations"),
])
def test_cli_errors_are_one_line_exit_2(args, needle):
    proc = _cli(*args)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
