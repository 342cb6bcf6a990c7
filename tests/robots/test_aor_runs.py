"""Whole AOR runs through the real CLI with the files provider (deterministic replies), the real
simulator and sandbox: rejection and repair, rollback to the best, the store, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from aor_helpers import REPLIES, csro, files_config
from csro.robots import AorStore

pytestmark = pytest.mark.slow


def comparable(directory) -> dict:
    """What a run decided: controllers, their outcomes (less timings), rounds and the final result."""
    with AorStore.open(directory) as store:
        controllers = [(c.id, c.sha256, c.parent, c.valid, c.error) for c in store.controllers()]
        episodes = {c[0]: {i: {k: v for k, v in o.items() if k != "controller_seconds"}
                           for i, o in store.episodes(c[0]).items()} for c in controllers}
        return {"controllers": controllers, "episodes": episodes, "final": store.final(),
                "rounds": store.rounds(), "calls": [str(q.key) for q, _ in store.llm_calls()]}


@pytest.fixture(scope="module")
def files_run(tmp_path_factory):
    """One whole run of ``files_config()``, shared (issue 39): the next test checks it, the
    kill -9 test ends like it. Its folder and ``csro run``'s output; no test changes it."""
    tmp_path = tmp_path_factory.mktemp("aor")
    return tmp_path / "run", csro("run", files_config(tmp_path), "--out", tmp_path / "run")


def test_a_files_run_rewrites_repairs_and_keeps_the_best(files_run):
    directory, done = files_run
    assert "best controller: c1.1  success rate 1.00" in done.stdout
    assert "c1: rejected: bad_action: get_action returned a list of 3" in done.stderr
    run = comparable(directory)
    assert [c[:1] + c[2:4] for c in run["controllers"]] == [
        ("c0", None, True), ("c1", "c0", False), ("c1.1", "c0", True), ("c2", "c1.1", True)]
    assert run["calls"] == ["0/propose/0", "1/rewrite/0", "1/repair-1/0", "2/rewrite/0"]
    # c0 closes in the air (0/2), c1.1 lifts (2/2), c2 is c0 again: rolled back, c1.1 stays the best
    rates = {r["controller"]: r.get("summary", {}).get("success_rate") for r in run["rounds"]}
    assert rates == {"c0": 0.0, "c1.1": 1.0, "c2": 0.0}
    assert [r["best"] for r in run["rounds"]] == ["c0", "c1.1", "c1.1"]
    assert run["final"]["best"] == "c1.1" and run["final"]["success_rate"] == 1.0
    with AorStore.open(directory) as store:
        c0 = store.episodes("c0")[0]
        assert c0["end"] == "horizon" and c0["min_distance"] > 0.05 and c0["last_phase"] == "lift"
        c11 = {c.id: c for c in store.controllers()}["c1.1"]
        assert c11.diagnosis.startswith("FAILURE MODE: the gripper closed 6 cm above")
        frames = store.frames("c1.1", 0)
        assert [f.label for f in frames][-1] == "end: success" and all(f.png.startswith(b"\x89PNG") for f in frames)
        assert store.frames("c1.1", 1) == []  # frames for the first episode only (episodes_with_frames: 1)
        # the rewrite prompt carried the outcomes and the memory
        rewrite = dict((str(q.key), q) for q, _ in store.llm_calls())["2/rewrite/0"].messages[-1].content
        assert "CURRENT CONTROLLER c1.1 (success 100%" in rewrite and "c1 (round 1): REJECTED" in rewrite
        assert "FAILURE MODE:" in rewrite and "progress stopped at step" in rewrite
    html = (directory / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == 3 * 5 and 'class="diff"' in html
    assert "img-src data:" in html and "<script" not in html


def test_kill_9_then_resume_ends_like_an_uninterrupted_run(tmp_path, files_run):
    config = files_config(tmp_path)
    whole, _ = files_run
    directory = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "csro", "run", str(config), "--out", str(directory)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if (directory / "aor.db").exists():
                with AorStore.open(directory) as store:
                    if store.rounds():
                        break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # orphaned workers, if any
        except ProcessLookupError:
            pass
    with AorStore.open(directory) as store:
        assert store.final() is None and len(store.rounds()) < 3
    status = json.loads(csro("status", directory, "--json").stdout)
    assert status["kind"] == "aor" and not status["done"] and status["round"] in (0, 1) and status["controllers"]
    resumed = csro("resume", directory)
    assert "best controller: c1.1" in resumed.stdout
    assert comparable(directory) == comparable(whole)
    before = comparable(directory)
    csro("resume", directory)  # a finished run: only the report is rewritten
    assert comparable(directory) == before
    assert csro("report", directory).stdout.strip() == str(directory / "report.html")
    status = json.loads(csro("status", directory, "--json").stdout)
    assert status["done"] and status["best"] == "c1.1" and status["final"]["success_rate"] == 1.0
    assert {c["id"]: c["success_rate"] for c in status["controllers"]} == {"c0": 0.0, "c1": None, "c1.1": 1.0,
                                                                           "c2": 0.0}


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    bad = csro("run", files_config(tmp_path), "--set", "task=Push", "--out", tmp_path / "x", check=False)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: unknown task 'Push' (valid: Lift, PickPlaceCan, Stack)"
    bad = csro("run", files_config(tmp_path, episodes=0), "--out", tmp_path / "y", check=False)
    assert bad.returncode == 2 and "config field episodes" in bad.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    missing = csro("robot-eval", "--task", "Lift", "--controller", tmp_path / "none.py", check=False)
    assert missing.returncode == 2 and "cannot read controller file" in missing.stderr


def test_a_budget_stop_then_resume_with_a_larger_budget_ends_like_the_uninterrupted_run(tmp_path):
    directory = tmp_path / "run"
    config = files_config(tmp_path, llm={"provider": "files", "path": str(REPLIES), "budget": {"calls": 2}})
    stopped = csro("run", config, "--out", directory, check=False)
    assert stopped.returncode == 3, stopped.stderr
    assert "stopped: llm.budget.calls = 2 reached: 2 calls spent" in stopped.stderr
    assert comparable(directory)["calls"] == ["0/propose/0", "1/rewrite/0"]  # the repair was not made
    csro("resume", directory, "--set", "llm.budget.calls=4")
    run = comparable(directory)
    assert run["calls"] == ["0/propose/0", "1/rewrite/0", "1/repair-1/0", "2/rewrite/0"]
    assert run["final"]["best"] == "c1.1" and run["final"]["success_rate"] == 1.0
    with AorStore.open(directory) as store:
        assert store.config()["llm"]["budget"]["calls"] == 4
