"""The CFR game suite: the named sets, the runner's files and ranks, and ``csro suite``."""

import csv
import subprocess
import sys

import pytest

from csro.errors import ConfigError
from csro.solvers.cfr import load_game
from csro.solvers.suite import GAME_SETS, GAMES, SuiteConfig, resolve_games, run_suite


def test_named_sets():
    assert [g.game for g in resolve_games("train")] == [
        "kuhn_poker(players=3)", "leduc_poker", "goofspiel(num_cards=4)", "liars_dice(dice_sides=5)"]
    assert [g.game for g in resolve_games("test")] == [
        "kuhn_poker(players=4)", "leduc_poker(players=3)", "goofspiel(num_cards=5)",
        "liars_dice(dice_sides=6)"]
    everything = resolve_games("all")
    assert len(everything) == 18 == len({g.game for g in everything})
    assert set(GAME_SETS["train"]) | set(GAME_SETS["test"]) <= set(GAME_SETS["all"])
    families = {g.game.split("(")[0] for g in everything}
    assert families == {"kuhn_poker", "leduc_poker", "goofspiel", "liars_dice", "blotto",
                        "battleship"}


def test_every_suite_game_string_loads():
    for g in GAMES.values():
        assert load_game(g.game).num_players() >= 2


def test_resolve_errors_and_config_validation(tmp_path):
    with pytest.raises(ConfigError, match="valid sets: train, test, all"):
        resolve_games("trian")
    games = resolve_games("kuhn_2p")
    with pytest.raises(ConfigError, match="unknown CFR algorithm"):
        SuiteConfig(games, ("cfr", "bogus"), 10, tmp_path)
    with pytest.raises(ConfigError, match="iterations"):
        SuiteConfig(games, ("cfr",), 0, tmp_path)


def test_run_suite_writes_curves_plots_and_ranks(tmp_path):
    config = SuiteConfig(resolve_games("kuhn_2p,goofspiel_3"), ("cfr", "cfr+"), 40, tmp_path,
                         checkpoints=(1, 10))
    result = run_suite(config)
    rows = list(csv.DictReader((tmp_path / "curves.csv").open()))
    assert len(rows) == 2 * 2 * 3
    assert {r["iteration"] for r in rows} == {"1", "10", "40"}
    assert (tmp_path / "kuhn_2p.png").stat().st_size > 0
    assert (tmp_path / "goofspiel_3.png").stat().st_size > 0
    ranks = result.ranks()
    for game in ("kuhn_2p", "goofspiel_3"):
        assert sorted(ranks[game].values()) == [1.0, 2.0]
        # CFR+ beats CFR on both after 40 iterations
        assert ranks[game]["cfr+"] == 1.0
    assert result.mean_ranks() == {"cfr": 2.0, "cfr+": 1.0}
    summary = (tmp_path / "summary.csv").read_text()
    assert "(mean rank)" in summary
    trees = list(csv.DictReader((tmp_path / "trees.csv").open()))
    assert [(t["name"], t["nodes"]) for t in trees] == [("kuhn_2p", "58"), ("goofspiel_3", "418")]


@pytest.mark.integration
@pytest.mark.slow
def test_cli_suite(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", "from csro.cli import main; main()", "suite", "--games", "kuhn_2p",
         "--algos", "cfr,dcfr", "--iterations", "20", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "mean rank" in proc.stdout and (tmp_path / "summary.csv").exists()
    bad = subprocess.run(
        [sys.executable, "-c", "from csro.cli import main; main()", "suite", "--games", "nope",
         "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown game set")


# Tree sizes documented in docs/solvers.md (OpenSpiel 2.0.2).
DOCUMENTED_NODES = {
    "kuhn_2p": 58, "kuhn_3p": 617, "kuhn_4p": 7886, "kuhn_5p": 116437, "leduc_2p": 9457,
    "leduc_3p": 1831601, "goofspiel_3": 418, "goofspiel_4": 26773, "goofspiel_5": 3346656,
    "goofspiel_4_3p": 653141, "liars_dice_4": 8181, "liars_dice_5": 51181,
    "liars_dice_6": 294883, "blotto_4c3f": 241, "blotto_5c3f_3p": 9724,
    "battleship_2x2_s1": 2581, "battleship_2x2_s2": 58709, "battleship_3x2_s2": 72675,
}


@pytest.mark.slow
def test_documented_tree_sizes():
    from csro.solvers.cfr import build_tree

    assert set(DOCUMENTED_NODES) == set(GAMES)
    for name, nodes in DOCUMENTED_NODES.items():
        tree = build_tree(GAMES[name].game)
        assert tree.num_nodes == nodes, name
        assert tree.level_aligned, name  # the vectorised best response applies


def test_noise_level_exploitabilities_tie():
    from csro.solvers.suite import SuiteResult

    class Run:
        def __init__(self, e):
            self.exploitability = e

    config = SuiteConfig(resolve_games("kuhn_2p"), ("cfr", "cfr+", "dcfr"), 10, "unused")
    result = SuiteResult(config, {("kuhn_2p", "cfr"): Run(5.5e-17), ("kuhn_2p", "cfr+"): Run(-5e-18),
                                  ("kuhn_2p", "dcfr"): Run(1e-9)}, {})
    assert result.ranks()["kuhn_2p"] == {"cfr": 1.5, "cfr+": 1.5, "dcfr": 3.0}
