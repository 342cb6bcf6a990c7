"""Run directories made by main 599e9f9 (before runs recorded their kind) resume, replay, report
and show their status as that code would have (tests/fixtures/legacy/README.md says how each
was made). A kill -9'ed CSRO run must end with the population, sigma and final metrics of the
finished run made then (before run secrets, issue 37, a run made today would too; now it draws
a secret of its own and plays other matches); a replay of the old run must reproduce it."""

from __future__ import annotations

import json
import pathlib
import sqlite3
import tarfile

import pytest

from csro import runkinds
from csro.store import RunStore
from run_helpers import csro

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "legacy"


def unpack(tmp_path: pathlib.Path, name: str) -> pathlib.Path:
    root = tmp_path / name
    with tarfile.open(FIXTURES / f"{name}.tar.gz") as archive:
        archive.extractall(root, filter="data")
    return root


def status(root: pathlib.Path, directory: str) -> dict:
    return json.loads(csro("status", directory, "--json", cwd=root).stdout)


def outcome(root: pathlib.Path, directory: str) -> dict:
    """What a CSRO run decided: members (by source hash), sigma, the final metrics, the LLM calls made."""
    s = status(root, directory)
    with RunStore.open(root / directory) as store:
        calls = [str(q.key) for q, _ in store.llm_calls()]
    return {"population": [m["sha256"] for m in s["population"]], "sigma": s["sigma"], "final": s["final"],
            "calls": calls}


def test_the_fixtures_hold_no_recorded_kind(tmp_path):
    """The point of the fixtures: they come from before the registry (no ``kind`` in the stored config)."""
    for name, db in (("csro", "run.db"), ("discover", "run.db"), ("aor", "aor.db"), ("train", "train.db")):
        with sqlite3.connect(unpack(tmp_path, name) / "finished" / db) as conn:
            config = json.loads(conn.execute("SELECT config FROM run").fetchone()[0])
        assert "kind" not in config and config


@pytest.mark.slow
def test_an_old_interrupted_csro_run_resumes_to_the_uninterrupted_result(tmp_path):
    root = unpack(tmp_path, "csro")
    before = status(root, "interrupted")
    assert before["kind"] == "csro" and before["iteration"] == 1 and not before["done"]
    done = csro("resume", "interrupted", cwd=root)
    assert "final sigma-mixture: PopReturn" in done.stdout
    resumed, old = outcome(root, "interrupted"), outcome(root, "finished")
    assert resumed == old
    # The old runs have no secret (issue 37) and keep the old derivation of their match seeds; a
    # run made today draws one, so its matches (and what they decided) are its own.
    csro("run", "config.yaml", "--out", "fresh", cwd=root)
    with RunStore.open(root / "interrupted") as a, RunStore.open(root / "fresh") as b:
        assert a.secret() is None and len(b.secret()) == 64
    assert len(old["population"]) == 3 and old["final"]["pop_return"] is not None
    assert any("repair" in key for key in old["calls"]) and any("refine" in key for key in old["calls"])


@pytest.mark.slow
def test_an_old_finished_csro_run_replays_identically_and_resumes_to_itself(tmp_path):
    root = unpack(tmp_path, "csro")
    csro("run", "replay.yaml", "--out", "replayed", cwd=root)
    old = outcome(root, "finished")
    replayed = outcome(root, "replayed")
    assert replayed == old
    csro("resume", "finished", cwd=root)  # finished: only the report is written
    assert outcome(root, "finished") == old
    assert csro("report", "finished", cwd=root).stdout.strip() == "finished/report.html"
    assert "PopReturn" in (root / "finished" / "report.html").read_text()


@pytest.mark.slow
def test_an_old_discovery_run_resumes_reports_and_shows_its_status(tmp_path):
    root = unpack(tmp_path, "discover")
    with RunStore.open(root / "finished") as store:
        before = store.final()
    s = status(root, "finished")
    assert s["kind"] == "discover" and s["done"] and s["target"] == "cfr" and s["final"]["best"] == before["best"]
    with sqlite3.connect(root / "finished" / "run.db") as conn:  # as if killed before the comparison was stored
        conn.execute("UPDATE run SET final = NULL")
    assert not status(root, "finished")["done"]
    resumed = csro("resume", "finished", cwd=root)
    assert "exploitability after K = 40" in resumed.stdout
    with RunStore.open(root / "finished") as store:
        after = store.final()
        assert len(store.llm_calls()) == 4  # served from the store, none made again
    assert after["best"] == before["best"] and after["fitness"] == pytest.approx(before["fitness"], rel=1e-9)
    for game, entry in before["games"].items():
        for algo, curve in entry["curves"].items():
            assert after["games"][game]["curves"][algo]["exploitability"] == pytest.approx(
                curve["exploitability"], rel=1e-6, abs=1e-12)
    assert csro("report", "finished", cwd=root).stdout.strip() == "finished/report.html"
    assert "Best vs the library" in (root / "finished" / "report.html").read_text()


@pytest.mark.slow
def test_an_old_training_run_resumes_from_its_checkpoint_and_reports(tmp_path):
    pytest.importorskip("torch")
    from csro.train.store import TrainStore

    root = unpack(tmp_path, "train")
    s = status(root, "interrupted")
    assert s["kind"] == "train" and s["step"] == 1 and s["steps"] == 3 and not s["done"]
    with TrainStore.open(root / "interrupted") as store:
        first = store.steps()
    done = csro("resume", "interrupted", cwd=root)
    assert "report: interrupted/report.html" in done.stdout
    with TrainStore.open(root / "interrupted") as store:
        steps = store.steps()
        final = store.final()
    assert [x["step"] for x in steps] == [0, 1, 2] and steps[:2] == first  # only step 2 was trained
    assert final["steps"] == 3 and final["reward_over_steps"] == [x["reward_mean"] for x in steps]
    after = status(root, "interrupted")
    assert after["done"] and after["step"] == 2 and after["checkpoint"] == 2
    finished = status(root, "finished")
    assert finished["done"] and finished["steps"] == 2
    assert csro("report", "finished", cwd=root).stdout.strip() == "finished/report.html"
    assert "Reward over steps" in (root / "finished" / "report.html").read_text()


@pytest.mark.slow
def test_an_old_interrupted_aor_run_resumes_to_the_finished_one(tmp_path):
    pytest.importorskip("robosuite")
    from csro.robots import AorStore

    root = unpack(tmp_path, "aor")
    s = status(root, "interrupted")
    assert s["kind"] == "aor" and s["round"] == 0 and s["rounds"] == 2 and not s["done"]
    done = csro("resume", "interrupted", cwd=root)
    assert "best controller: c1.1" in done.stdout

    def decided(directory: str) -> dict:
        with AorStore.open(root / directory) as store:
            return {"controllers": [(c.id, c.sha256, c.parent, c.valid) for c in store.controllers()],
                    "calls": [str(q.key) for q, _ in store.llm_calls()],
                    "best": [(r["controller"], r["best"]) for r in store.rounds()],
                    "final": (store.final()["best"], store.final()["success_rate"])}

    assert decided("interrupted") == decided("finished")
    assert status(root, "finished")["best"] == "c1.1"
    assert csro("report", "finished", cwd=root).stdout.strip() == "finished/report.html"


def test_the_legacy_kind_is_read_only_where_none_is_recorded(tmp_path):
    root = unpack(tmp_path, "csro")
    assert runkinds.kind_of(root / "finished").name == "csro"
    with sqlite3.connect(root / "finished" / "run.db") as conn:  # a recorded kind wins over the legacy rule
        config = json.loads(conn.execute("SELECT config FROM run").fetchone()[0])
        conn.execute("UPDATE run SET config = ?", (json.dumps({**config, "kind": "discover"}),))
    assert runkinds.kind_of(root / "finished").name == "discover"
