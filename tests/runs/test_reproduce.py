"""``csro reproduce`` end to end with the files provider: a tiny grid of real runs, its summary,
resuming it, and the reference rows checked against ``csro eval`` of the same bots."""

from __future__ import annotations

import json

import numpy as np
import pytest

from run_helpers import csro


@pytest.mark.slow
def test_a_tiny_grid_runs_summarises_and_resumes(tmp_path, replies):
    population = "[builtin:rockbot,builtin:copybot,builtin:greenberg]"
    args = ["reproduce", "rrps", "--out", tmp_path / "grid", "--oracles", "zero_shot", "--seeds", "2",
            "--set", "game=rrps(num_throws=100)", "--set", "iterations=1", "--set", "oracle.max_repairs=0",
            "--set", "oracle.grammar_fallback=false", "--set", "llm.provider=files", "--set", f"llm.path={replies}",
            "--set", f"evaluation.population={population}", "--set", "evaluation.matches_per_opponent=2",
            "--set", "meta_game.resamples=5", "--set", "execution.processes=2"]
    done = csro(*args)
    grid = tmp_path / "grid"
    # progress (issue 26): before each cell, the cells done and left and the time left once one is timed
    assert "grid: 0 cells done, 6 left, time left unknown yet; next zero_shot-s0" in done.stderr
    assert "grid: 5 cells done, 1 left, about " in done.stderr and "; next no_model-s1" in done.stderr
    assert "summary.html" in done.stdout
    summary = json.loads((grid / "summary.json").read_text())
    ours, frame, baseline = summary["ours"]
    assert ours["name"] == "zero_shot (ours)" and ours["seeds"] == 2 and ours["failed"] == 0
    # the no-model rows (issues 26, 40): the same seeds with the grammar frame searched without the
    # model, and with the game's example policy; no LLM call in either
    assert frame["name"] == "no model: grammar frame (baseline)" and frame["seeds"] == 2 and frame["failed"] == 0
    assert baseline["name"] == "no model: worked example (baseline)" and baseline["seeds"] == 2
    assert baseline["failed"] == 0
    assert summary["oracles"] == ["zero_shot", "grammar_search", "no_model"] and summary["notes"] == []
    finals = []
    for seed in (0, 1):
        status = json.loads(csro("status", grid / "cells" / f"zero_shot-s{seed}", "--json").stdout)
        assert status["done"] and status["final"]["expl_estimate"]["iteration"] == 2
        finals.append(status["final"])
    mean = sum(f["agg_score"] for f in finals) / 2
    assert abs(ours["agg_score"][0] - mean) < 1e-9 and ours["agg_score"][1] is not None
    written = [json.loads(csro("status", grid / "cells" / f"zero_shot-s{s}", "--json").stdout)["sigma_model_written"][0]
               for s in (0, 1)]
    assert ours["sigma_model_written"][0] == pytest.approx(sum(written) / 2)
    for seed in (0, 1):
        status = json.loads(csro("status", grid / "cells" / f"no_model-s{seed}", "--json").stdout)
        assert status["done"] and status["llm"]["calls"] == 0
        assert [m["author"] for m in status["population"]] == ["builtin", "example"]
        assert status["sigma_model_written"] == [0.0]
    assert baseline["sigma_model_written"] == [0.0, 0.0] and baseline["agg_score"][1] is not None
    frames = []
    for seed in (0, 1):
        status = json.loads(csro("status", grid / "cells" / f"grammar_search-s{seed}", "--json").stdout)
        assert status["done"] and status["llm"]["calls"] == 0
        assert {m["author"] for m in status["population"][1:]} <= {"frame", "example"}
        assert status["sigma_model_written"] == [0.0]
        frames.append(status)
    # sigma per kind of author, the mean over seeds (issue 40)
    assert frame["sigma_by_author"]["frame"] == pytest.approx(
        sum(s["sigma_by_author"][0]["frame"] for s in frames) / 2)
    assert frame["sigma_by_author"]["model"] == 0.0 and baseline["sigma_by_author"]["frame"] == 0.0
    # paired by seed: the model row minus each no-model row
    cells = {(o, s): json.loads(csro("status", grid / "cells" / f"{o}-s{s}", "--json").stdout)["final"]
             for o in summary["oracles"] for s in (0, 1)}
    assert [(p["oracle"], p["baseline"], p["seeds"]) for p in summary["paired"]] == [
        ("zero_shot", "grammar_search", 2), ("zero_shot", "no_model", 2)]
    for p in summary["paired"]:
        diffs = [cells["zero_shot", s]["agg_score"] - cells[p["baseline"], s]["agg_score"] for s in (0, 1)]
        assert p["agg_score"][0] == pytest.approx(sum(diffs) / 2)
        assert p["agg_score"][1] == pytest.approx(12.706 * abs(diffs[0] - diffs[1]) / 2, rel=1e-3)  # t(0.975, 1)
    assert [r["name"] for r in summary["references"]] == [
        "greenberg (measured here)", "iocainebot (measured here)", "randbot (measured here)"]
    assert any(r["name"] == "CSRO LinearRefinement (code, top-5) (paper)" for r in summary["paper"])
    # the reference rows are what csro eval gives for the same bots, matches and seed
    evaluated = json.loads(csro("eval", "--game", "rrps(num_throws=100)", "--policy", "builtin:greenberg",
                                "--opponents", population.strip("[]"), "--matches", "2", "--seed", "0",
                                "--json").stdout)
    [greenberg] = evaluated["results"]
    assert summary["references"][0]["agg_score"][0] == greenberg["agg_score"]
    for name in ("summary.md", "summary.csv", "summary.html"):
        assert (grid / name).stat().st_size > 0
    assert "| zero_shot (ours) | 2 |" in (grid / "summary.md").read_text()
    md = (grid / "summary.md").read_text()
    assert "sigma by author |" in md and "| no model: worked example (baseline) | 2 |" in md
    assert "| no model: grammar frame (baseline) | 2 |" in md
    assert "| zero_shot − no model: grammar frame (baseline) | 2 |" in md
    assert "Paired by seed" in (grid / "summary.html").read_text()
    # again: every cell is finished, so nothing is run and the summary is the same
    calls = [json.loads(csro("status", grid / "cells" / f"zero_shot-s{s}", "--json").stdout)["llm"]["calls"]
             for s in (0, 1)]
    again = csro(*args)
    assert "cell zero_shot-s0: resuming" in again.stderr and "cells done" not in again.stderr  # nothing left
    assert json.loads((grid / "summary.json").read_text())["ours"] == summary["ours"]
    assert calls == [json.loads(csro("status", grid / "cells" / f"zero_shot-s{s}", "--json").stdout)["llm"]["calls"]
                     for s in (0, 1)]
    # a grid is a run kind: status and report work on its directory
    status = json.loads(csro("status", grid, "--json").stdout)
    assert status["kind"] == "reproduce" and status["done"] and status["ours"] == summary["ours"]
    assert status["cells"] == {f"{o}-s{s}": {"iteration": 1, "done": True}
                               for o in ("zero_shot", "grammar_search", "no_model") for s in (0, 1)}
    (grid / "summary.json").unlink()
    assert csro("report", grid).stdout.strip() == str(grid / "summary.html")
    assert json.loads((grid / "summary.json").read_text())["ours"] == summary["ours"]


@pytest.mark.slow
def test_a_bad_grid_is_refused_before_anything_runs(tmp_path):
    done = csro("reproduce", "chess", "--out", tmp_path / "g", check=False)
    assert done.returncode == 2 and "unknown experiment 'chess'" in done.stderr
    done = csro("reproduce", "rrps", "--out", tmp_path / "g", "--oracles", "telepathy", check=False)
    assert done.returncode == 2 and "oracle.kind" in done.stderr and not (tmp_path / "g").exists()


def test_a_grid_recorded_before_a_new_config_field_is_the_same_grid():
    """A grid directory written by an older csro (its base lacks a field added since) resumes;
    another grid (other seeds, another base value) is still refused."""
    import dataclasses

    from csro.reproduce import grid_config, make_grid, same_grid

    grid = make_grid(grid_config("leduc", config=None, oracles=["evolve"], seeds=3, overrides=["llm.threads=1"]))
    record = json.loads(json.dumps(dataclasses.asdict(grid)))
    older = json.loads(json.dumps(record))
    del older["base"]["oracle"]["evolve"]["repairs"]
    assert same_grid(older, record)
    assert not same_grid(dict(older, seeds=[0, 1]), record)
    older["base"]["llm"]["threads"] = 2
    assert not same_grid(older, record)
    assert not same_grid({"game": "leduc"}, record)


def test_the_no_model_rows_are_added_once_and_can_be_left_out_issue_40():
    from csro.reproduce import grid_config, make_grid, summarize

    def oracles(names, game="rrps", **kw):
        return make_grid(grid_config(game, config=None, oracles=names, seeds=1, overrides=[], **kw)).oracles

    assert oracles(["evolve"]) == ("evolve", "grammar_search", "no_model")
    assert oracles(["no_model", "evolve"]) == ("no_model", "evolve", "grammar_search")
    assert oracles(["evolve", "grammar_search"]) == ("evolve", "grammar_search", "no_model")
    assert oracles(["evolve"], baseline=False) == ("evolve", "grammar_search")
    assert oracles(["evolve"], frame=False) == ("evolve", "no_model")
    # Leduc has no strict policy grammar: no frame row, and the summary says why
    grid = make_grid(grid_config("leduc", config=None, oracles=["evolve"], seeds=1, overrides=[]))
    assert grid.oracles == ("evolve", "no_model")
    summary = summarize(grid, {"evolve-s0": {"error": "x"}, "no_model-s0": {"error": "x"}}, {})
    assert summary["notes"] == ["no grammar-without-model row: leduc has no strict policy grammar (its fallback "
                                "skeleton leaves the method bodies to a model)"]
    assert summary["paired"] == [{"name": "evolve − no model: worked example (baseline)", "oracle": "evolve",
                                  "baseline": "no_model", "seeds": 0, "pop_return": (None, None),
                                  "pop_expl": (None, None), "agg_score": (None, None)}]


def test_differences_are_paired_by_seed_over_the_seeds_both_finished_issue_40():
    from csro.reproduce import Grid, paired

    def cell(agg):
        return {"final": {"pop_return": agg + 1, "pop_expl": 1.0, "agg_score": agg}}

    grid = Grid("rrps", ("evolve", "grammar_search", "no_model"), (0, 1, 2), {})
    cells = {"evolve-s0": cell(10), "evolve-s1": cell(30), "evolve-s2": cell(50),
             "grammar_search-s0": cell(0), "grammar_search-s1": cell(10), "grammar_search-s2": {"error": "boom"},
             "no_model-s0": cell(5), "no_model-s1": cell(5), "no_model-s2": cell(5)}
    frame, example = paired(grid, cells, {})
    assert frame["seeds"] == 2 and frame["agg_score"] == pytest.approx((15.0, 12.706 * 5), rel=1e-3)  # diffs 10, 20
    assert example["seeds"] == 3 and example["agg_score"][0] == pytest.approx(25.0)
    assert example["pop_expl"] == (0.0, 0.0)


def test_rrps_rows_are_scored_on_each_part_of_the_tuning_split_issue_40():
    """AggScore on the held-out and the training bots beside the whole, from each cell's
    per-opponent returns, checked against ``population_score`` on the same table; the paired
    difference on each part too."""
    from csro.evaluation.metrics import population_score
    from csro.evaluation.payoff_table import MatchResult, Mixture, PayoffTable, record
    from csro.games import load_game
    from csro.games.rrps import HELDOUT_BOTS, TRAINING_BOTS
    from csro.reproduce import Grid, evaluation_parts, paired, part_agg_score, summarize, table_rows

    rrps = load_game("rrps")
    parts = evaluation_parts(rrps)
    assert parts == {"bots-training": [f"builtin:{b}" for b in TRAINING_BOTS],
                     "bots-heldout": [f"builtin:{b}" for b in HELDOUT_BOTS]}
    assert evaluation_parts(load_game("leduc")) == {}  # no named parts
    assert evaluation_parts(rrps, "bots-heldout") == {}  # a part of the whole only where the whole was played
    assert evaluation_parts(rrps, ["builtin:rockbot", "builtin:copybot"]) == {}
    bots = rrps.population()
    rng = np.random.default_rng(0)

    def final(shift):  # a mixture of two members scored as the Scorer scores it
        table = PayoffTable()
        for member in ("a", "b"):
            for bot in bots:
                for _ in range(2):
                    r = float(rng.integers(-60, 60)) + shift
                    record(table, [MatchResult((member, bot), (r, -r), 0)])
        return population_score(table, Mixture.of(["a", "b"], [0.25, 0.75]), bots, name="sigma").to_dict()

    scores = {seed: (final(20), final(0)) for seed in (0, 1)}
    for model, example in scores.values():
        for refs in parts.values():
            table = PayoffTable()  # the same part scored directly
            for o in refs:
                r = model["per_opponent"][o]
                record(table, [MatchResult(("sigma", o), (r, -r), 0)])
            assert part_agg_score(model, refs) == pytest.approx(population_score(table, "sigma", refs).agg_score)
    assert part_agg_score(scores[0][0], ["builtin:not-evaluated"]) is None

    grid = Grid("rrps", ("evolve", "no_model"), (0, 1), {"game": "rrps", "iterations": 1, "llm": {"provider": "files"}})
    cells = {f"{o}-s{seed}": {"final": scores[seed][i]} for seed in (0, 1) for i, o in enumerate(("evolve", "no_model"))}
    summary = summarize(grid, cells, {})
    header, rows = table_rows(summary)
    assert header[2:6] == ["PopReturn", "PopExpl", "AggScore", "AggScore bots-training"]
    assert header[6] == "AggScore bots-heldout"
    heldout = parts["bots-heldout"]
    (diff,) = paired(grid, cells, parts)
    assert diff["agg_score@bots-heldout"][0] == pytest.approx(
        np.mean([part_agg_score(m, heldout) - part_agg_score(e, heldout) for m, e in scores.values()]))


def test_the_time_left_is_the_mean_of_each_oracles_cells_run_so_far():
    from csro.reproduce import CellClock, Grid

    grid = Grid("rrps", ("evolve", "no_model"), (0, 1, 2), {})
    clock = CellClock(grid, {"evolve-s0"})  # finished before this call: done, not timed
    assert clock.where() == {"done": 1, "left": 5, "eta_s": None}
    clock.finished("evolve-s0", "evolve", 0.1)
    clock.finished("evolve-s1", "evolve", 100.0)
    assert clock.where() == {"done": 2, "left": 4, "eta_s": 400.0}  # no_model untimed: the mean of all
    clock.finished("evolve-s2", "evolve", 200.0)
    clock.finished("no_model-s0", "no_model", 4.0)
    assert clock.where() == {"done": 4, "left": 2, "eta_s": 8.0}


def test_a_grid_can_start_at_another_seed_and_reopens_with_its_seeds(tmp_path):
    """``--first-seed 3 --seeds 3`` runs seeds 3, 4, 5 (new draws beside a grid of seeds 0-2);
    the recorded grid reads back as the same grid."""
    import dataclasses

    from csro.errors import ConfigError
    from csro.reproduce import GridConfig, GridStore, grid_config, make_grid

    grid = make_grid(grid_config("rrps", config=None, oracles=["evolve"], seeds=3, overrides=[], first_seed=3))
    assert grid.seeds == (3, 4, 5)
    assert [name for _, _, name in grid.cells()][:3] == ["evolve-s3", "evolve-s4", "evolve-s5"]
    assert grid.cell_config("evolve", 4).seed == 4
    reopened = GridStore(tmp_path, json.loads(json.dumps(dataclasses.asdict(grid))))
    assert make_grid(GridConfig(**reopened.config())) == grid
    with pytest.raises(ConfigError, match="--first-seed"):
        grid_config("rrps", config=None, oracles=["evolve"], seeds=1, overrides=[], first_seed=-1)
