"""``csro reproduce`` end to end with the files provider: a tiny grid of real runs, its summary,
resuming it, and the reference rows checked against ``csro eval`` of the same bots."""

from __future__ import annotations

import json

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
    assert "grid: 0 cells done, 4 left, time left unknown yet; next zero_shot-s0" in done.stderr
    assert "grid: 3 cells done, 1 left, about " in done.stderr and "; next no_model-s1" in done.stderr
    assert "summary.html" in done.stdout
    summary = json.loads((grid / "summary.json").read_text())
    ours, baseline = summary["ours"]
    assert ours["name"] == "zero_shot (ours)" and ours["seeds"] == 2 and ours["failed"] == 0
    # the no-model row (issue 26): the same seeds with the game's example policy, no LLM call
    assert baseline["name"] == "no model (baseline)" and baseline["seeds"] == 2 and baseline["failed"] == 0
    assert summary["oracles"] == ["zero_shot", "no_model"]
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
    assert "sigma on model-written |" in (grid / "summary.md").read_text()
    assert "| no model (baseline) | 2 |" in (grid / "summary.md").read_text()
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
    assert status["cells"] == {f"{o}-s{s}": {"iteration": 1, "done": True} for o in ("zero_shot", "no_model")
                               for s in (0, 1)}
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


def test_the_baseline_row_is_added_once_and_can_be_left_out():
    from csro.reproduce import grid_config, make_grid

    def oracles(names, **kw):
        return make_grid(grid_config("rrps", config=None, oracles=names, seeds=1, overrides=[], **kw)).oracles

    assert oracles(["evolve"]) == ("evolve", "no_model")
    assert oracles(["no_model", "evolve"]) == ("no_model", "evolve")
    assert oracles(["evolve"], baseline=False) == ("evolve",)


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
