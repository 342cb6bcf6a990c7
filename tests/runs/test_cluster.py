"""Same run (seed and secret), same tables on any layout, a real two-node Ray cluster included (issue 28).

One small CSRO run (files provider, RRPS) whose policies draw from every kind of randomness
is run with the local backend in one process and twice on a cluster of two nodes started
with ``ray start`` on loopback (``ray_cluster.Cluster``), each a copy of the first run's
configuration and secret (``run_helpers.same_run``) resumed from its start: every stored
match row (phase, policies, seed, returns, forfeit) must be the same. Then the cluster's
second node is killed mid-run: the run completes on the remaining node or stops with a clear
error, and ``csro resume`` ends equal to the uninterrupted run (two local processes).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from ray_cluster import Cluster
from run_helpers import FREQUENCY, csro, same_run, small_config, status, write_config

from csro.store import PHASES, RunStore, StoreError

pytestmark = pytest.mark.slow

DICE = '''\
import random

SEEN = []

class Agent:
    """Plays at random, leaning on what the opponent played last (module and class state)."""

    history = []

    def act(self, observation):
        SEEN.append(observation["opponent_action"])
        self.history.append(random.random())
        if observation["opponent_action"] == "ROCK" and random.random() < 0.5 + 0.1 * (len(SEEN) % 2):
            return "PAPER"
        return random.choice(["ROCK", "PAPER", "SCISSORS"])
'''

NUMPY = '''\
import random
import numpy as np

class Agent:
    """Mixes NumPy's global generator, an unseeded default_rng and an unseeded Random."""

    def __init__(self):
        self.gen = np.random.default_rng()
        self.mine = random.Random()

    def act(self, observation):
        if self.mine.random() < 0.3:
            return ["ROCK", "PAPER", "SCISSORS"][int(self.gen.integers(3))]
        return str(np.random.choice(["ROCK", "PAPER", "SCISSORS"]))
'''


@pytest.fixture
def random_replies(tmp_path):
    folder = tmp_path / "replies"
    folder.mkdir()
    for name, source in {"a_dice.py": DICE, "b_numpy.py": NUMPY, "c_frequency.py": FREQUENCY}.items():
        (folder / name).write_text(source)
    return folder


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = Cluster(tmp_path_factory.mktemp("cluster")).start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(autouse=True)
def _token_auth(monkeypatch, cluster):
    """The driver (``csro run`` here) is handed the head's token, as the README says."""
    for key, value in cluster.driver_env().items():
        monkeypatch.setenv(key, value)


def _config(replies, **execution):
    config = small_config(replies, game="rrps(num_throws=300)", matches_per_cell=4, execution=execution)
    config["evaluation"]["matches_per_opponent"] = 4
    return config


def _rows(directory) -> dict[str, list]:
    with RunStore.open(directory) as store:
        return {phase: sorted((r.policies, r.seed, r.returns, r.forfeit) for r in store.matches(phase))
                for phase in PHASES}


def _outcome(directory) -> dict:
    s = status(directory)
    return {"population": [m["sha256"] for m in s["population"]], "sigma": s["sigma"], "final": s["final"]}


def test_every_layout_gives_the_same_match_rows(tmp_path, random_replies, cluster):
    # Ray started on this node alone is tests/evaluation/test_backends.py's (the local payoff
    # table); any chunk size and process count, tests/evaluation/test_seed_alone.py's; two local
    # processes against the cluster, the killed-node test's below.
    layouts = {
        "local-1": {"processes": 1},
        "cluster": {"backend": "ray", "address": cluster.address},
        "cluster-again-chunks-7": {"backend": "ray", "address": cluster.address, "chunk_matches": 7},
    }
    rows = {}
    for name, execution in layouts.items():
        if not rows:
            csro("run", write_config(tmp_path / f"{name}.yaml", _config(random_replies, **execution)),
                 "--out", tmp_path / name)
        else:  # the same run (its secret, issue 37) on another layout
            csro("resume", same_run(tmp_path / "local-1", tmp_path / name, execution=execution))
        rows[name] = _rows(tmp_path / name)
    reference = rows.pop("local-1")
    counts = {phase: len(got) for phase, got in reference.items()}
    # How many rows each phase holds depends on the run's secret (which candidates join, how
    # many matches the adaptive meta-game plays: 59 to 103 seen); every phase a run writes is there.
    assert all(counts[phase] > 0 for phase in ("meta", "eval", "oracle", "check")), counts
    assert len({r[2] for got in reference.values() for r in got}) > 10  # returns vary: the randomness is in play
    for name, got in rows.items():
        assert got == reference, f"{name} differs from local-1"


def test_a_node_killed_mid_run_then_resume_ends_like_an_uninterrupted_run(tmp_path, random_replies, cluster):
    whole = tmp_path / "whole"
    csro("run", write_config(tmp_path / "whole.yaml", _config(random_replies, processes=2)), "--out", whole)

    directory = same_run(whole, tmp_path / "killed", execution={"backend": "ray", "address": cluster.address})
    run = subprocess.Popen([sys.executable, "-m", "csro", "resume", str(directory)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and run.poll() is None and not _has_matches(directory):
        time.sleep(0.2)
    cluster.kill_raylet()
    out, err = run.communicate(timeout=600)
    if run.returncode != 0:  # a clear error, then resume on what is left
        assert "Traceback" not in err, err[-3000:]
        assert "error:" in err.lower(), err[-3000:]
        csro("resume", directory)
    assert _outcome(directory) == _outcome(whole)
    assert _rows(directory) == _rows(whole)


def _has_matches(directory) -> bool:
    try:
        with RunStore.open(directory) as store:
            return bool(store.matches("eval") or store.matches("meta"))
    except StoreError:  # not created yet, or its schema not yet committed
        return False


def test_a_driver_without_the_cluster_token_is_told_what_to_set(tmp_path, random_replies, cluster, monkeypatch):
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    monkeypatch.setenv("HOME", str(tmp_path))  # a machine that never ran Ray: no ~/.ray/auth_token
    config = write_config(tmp_path / "c.yaml", _config(random_replies, backend="ray", address=cluster.address))
    done = csro("run", config, "--out", tmp_path / "refused", check=False)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "RAY_AUTH_TOKEN" in done.stderr and "ray get-auth-token" in done.stderr, done.stderr[-3000:]
