"""Whole CSRO runs through the real CLI, with the files and replay providers (deterministic)."""

from __future__ import annotations

import hashlib

import pytest

from csro.authorship import by_author_text
from csro.seeding import derive_seed
from csro.store import RunStore
from run_helpers import POLICIES, csro, kill_after_iteration, same_run, small_config, status, write_config


def _sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _run(tmp_path, name, config) -> tuple:
    directory = tmp_path / name
    done = csro("run", write_config(tmp_path / f"{name}.yaml", config), "--out", directory)
    return directory, done


def _outcome(directory) -> dict:
    s = status(directory)
    return {"population": [m["sha256"] for m in s["population"]], "sigma": s["sigma"], "final": s["final"]}


def test_a_files_run_completes_and_shows_its_policies(tmp_path, replies):
    config = small_config(replies)
    config["evaluation"]["br_estimate"] = True
    directory, done = _run(tmp_path, "run", config)
    assert f"report: {directory / 'report.html'}" in done.stdout
    assert "final sigma-mixture: PopReturn" in done.stdout
    with RunStore.open(directory) as store:  # the initial policy's metrics (iteration 0) beside the final ones
        initial = store.iterations()[0]
    assert initial["iteration"] == 0 and f"initial policy:      PopReturn {initial['pop_return']:.3f}" in done.stdout
    assert "iteration 3/3" in done.stderr
    s = status(directory)
    assert s["done"] and s["iteration"] == 3 and s["iterations"] == 3
    assert [m["id"] for m in s["population"]] == ["p0", "p1", "p2", "p3"]
    assert [m["sha256"] for m in s["population"][1:]] == [_sha(src) for src in POLICIES.values()]
    assert s["population"][0]["oracle"] == "initial" and s["population"][1]["oracle"] == "zero_shot"
    assert len(s["sigma"]) == 4 and sum(s["sigma"]) == pytest.approx(1.0)
    # authorship (issue 26): the initial built-in and the model's programs with the calls that wrote them
    assert [m["author"] for m in s["population"]] == ["builtin", "model", "model", "model"]
    assert [m["call_keys"] for m in s["population"]] == [[], ["1/propose/0"], ["2/propose/0"], ["3/propose/0"]]
    assert s["sigma_model_written"] == [pytest.approx(sum(s["sigma"][1:]))]
    # sigma per kind of author (issue 40): every kind, the model's members apart from the built-in
    assert s["sigma_by_author"] == [pytest.approx({"model": sum(s["sigma"][1:]), "grammar": 0.0, "frame": 0.0,
                                                   "example": 0.0, "builtin": s["sigma"][0], "file": 0.0,
                                                   "unknown": 0.0})]
    assert f"sigma by author: {by_author_text(s['sigma_by_author'][0])}" in done.stdout
    assert "│ author " in done.stdout.replace("┃", "│")
    assert set(s["final"]) == {"pop_return", "pop_expl", "agg_score", "nash_conv", "expl_estimate", "seats"}
    assert s["final"]["seats"] is None and s["populations"] == [s["population"]]  # one shared population
    assert -200 <= s["final"]["pop_return"] <= 200
    # one more best response against sigma_3 (iteration 4; the files provider cycles to its first reply)
    estimate = s["final"]["expl_estimate"]
    assert estimate["iteration"] == 4 and estimate["sha256"] == _sha(POLICIES["a_frequency.py"])
    assert estimate["ci95"] >= 0 and estimate["lower_bound"] == max(0.0, estimate["utility"])
    assert s["llm"]["calls"] == 4 and s["llm"]["errors"] == 0
    assert s["sandbox"]["missing"] == {} and s["sandbox"]["seccomp"] is True  # what the code ran under
    html = (directory / "report.html").read_text()
    assert "landlock: ABI" in html and "any other kills the worker" in html
    for docstring in ("Counters the opponent", "Beats the opponent", "Predicts the opponent"):
        assert docstring in html  # every policy's source is shown
    assert "PopReturn" in html
    assert f"sigma by author</th><td>{by_author_text(s['sigma_by_author'][0])}" in html
    with RunStore.open(directory) as store:
        final = store.final()
        assert final["pop_return"] == s["final"]["pop_return"]
        assert set(final["per_opponent"]) == {"builtin:rockbot", "builtin:randbot", "builtin:greenberg",
                                              "builtin:copybot"}


def _public_seeds(store, config: dict) -> set[int]:
    """The seeds the matches of a run would have without its secret (the old derivation)."""
    names = {n for r in store.matches("meta") + store.matches("eval") for n in r.policies}
    return {derive_seed(config["seed"], a, b, m) for a in names for b in names for m in range(8)}


@pytest.mark.slow
def test_kill_9_then_resume_ends_like_an_uninterrupted_run(tmp_path, replies):
    """The same run directory gives the same tables, killed and resumed or played at once: its
    secret (issue 37) is in its store, so the resumed run plays the seeds it played before."""
    config = small_config(replies, game="rrps")  # 1000 throws: iterations take long enough to interrupt
    directory = tmp_path / "killed"
    kill_after_iteration(write_config(tmp_path / "killed.yaml", config), directory)
    interrupted = status(directory)
    assert not interrupted["done"] and interrupted["iteration"] < 3
    whole = same_run(directory, tmp_path / "whole")
    resumed = csro("resume", directory)
    assert "report:" in resumed.stdout
    csro("resume", whole)
    assert _outcome(directory) == _outcome(whole)
    with RunStore.open(directory) as a, RunStore.open(whole) as b:
        assert a.secret() == b.secret() and len(a.secret()) == 64
        assert a.match_counts() == b.match_counts()
        key = lambda r: (r.policies, r.seed)  # noqa: E731
        assert sorted(a.matches("meta"), key=key) == sorted(b.matches("meta"), key=key)
        assert sorted(a.matches("eval"), key=key) == sorted(b.matches("eval"), key=key)
        assert not {r.seed for r in a.matches("meta") + a.matches("eval")} & _public_seeds(a, config)
    separate, _ = _run(tmp_path, "separate", config)  # a run of its own draws a secret of its own
    with RunStore.open(directory) as a, RunStore.open(separate) as c:
        assert a.secret() != c.secret()
        assert not {r.seed for r in a.matches("meta")} & {r.seed for r in c.matches("meta")}


@pytest.mark.slow
def test_resume_of_a_finished_run_changes_nothing(tmp_path, replies):
    directory, _ = _run(tmp_path, "run", small_config(replies))
    before = _outcome(directory)
    csro("resume", directory)
    assert _outcome(directory) == before


@pytest.mark.slow
def test_replay_reproduces_a_run_without_the_model(tmp_path, replies):
    first, _ = _run(tmp_path, "first", small_config(replies))
    again, _ = _run(tmp_path, "again", small_config(replies, llm={"provider": "replay", "path": str(first)}))
    assert _outcome(again) == _outcome(first)
    with RunStore.open(first) as a, RunStore.open(again) as b:
        assert [(q.key, r.text) for q, r in a.llm_calls()] == [(q.key, r.text) for q, r in b.llm_calls()]
        assert a.secret() == b.secret() is not None  # the replay plays the matches the run played
        key = lambda r: (r.policies, r.seed)  # noqa: E731
        for phase in ("meta", "eval"):
            assert sorted(a.matches(phase), key=key) == sorted(b.matches(phase), key=key)
    refused = csro("run", write_config(tmp_path / "self.yaml", small_config(
        replies, llm={"provider": "replay", "path": str(tmp_path / "nowhere")})), "--out", tmp_path / "x",
        check=False)
    assert refused.returncode == 2 and refused.stderr.startswith("error: ")


def test_non_code_and_broken_replies_are_survived_and_recorded(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "a.txt").write_text("I am sorry, I cannot write code for that game.")
    (folder / "b.py").write_text("class Agent:\n    def act(self, observation)\n        return 'ROCK'\n")
    (folder / "c.py").write_text("class Agent:\n    def act(self, observation):\n        return 'LIZARD'\n")
    directory, done = _run(tmp_path, "run", small_config(folder))
    s = status(directory)
    assert s["done"] and [m["id"] for m in s["population"]] == ["p0"]  # nothing invalid entered
    with RunStore.open(directory) as store:
        failed = store.events("oracle_failed")
        assert [e["iteration"] for e in failed] == [1, 2, 3]
        rejected = [e["data"] for e in store.events("oracle_rejected")]
        assert len(rejected) >= 3
    assert "oracle failed" in done.stderr


@pytest.mark.parametrize("setting, field", [
    ("iterations=0", "iterations"),
    ("oracle.kind=best", "oracle.kind"),
    ("llm.provider=nobody", "llm.provider"),
])
def test_malformed_configs_exit_2_with_one_line_naming_the_field(tmp_path, replies, setting, field):
    path = write_config(tmp_path / "c.yaml", small_config(replies))
    done = csro("run", path, "--out", tmp_path / "run", "--set", setting, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0]
    assert not (tmp_path / "run").exists()


def test_unknown_game_is_refused_before_anything_is_written(tmp_path, replies):
    path = write_config(tmp_path / "c.yaml", small_config(replies, game="rrpx"))
    done = csro("run", path, "--out", tmp_path / "run", check=False)
    assert done.returncode == 2 and "unknown game 'rrpx'" in done.stderr
    assert not (tmp_path / "run").exists()

