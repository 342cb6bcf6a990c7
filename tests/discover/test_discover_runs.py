"""Discovery runs (``kind: discover``) end to end through the real CLI, with the files provider and the embedded model."""

import json
import sqlite3

import pytest
import yaml

from csro.store import RunStore

from tests.runs.run_helpers import csro

QUADRATIC = """Quadratic averaging:
<<<<<<< SEARCH
        return block.cumulative_policy + ((t + 1.0) * reach)[:, None] * policy
=======
        return block.cumulative_policy + ((t + 1.0) ** 2 * reach)[:, None] * policy
>>>>>>> REPLACE
"""
MISPLACED = "<<<<<<< SEARCH\n        return 0\n=======\n        return 1\n>>>>>>> REPLACE\n"


def replies(tmp_path):
    folder = tmp_path / "replies"
    folder.mkdir()
    (folder / "a.txt").write_text(QUADRATIC)
    (folder / "b.txt").write_text(MISPLACED)
    return folder


def config(tmp_path, **fields):
    path = tmp_path / "discover.yaml"
    path.write_text(yaml.safe_dump({"kind": "discover", "target": "cfr", "train_games": "kuhn_2p",
                                    "test_games": "kuhn_3p", **fields}))
    return path


@pytest.fixture(scope="module")
def discovered(tmp_path_factory):
    """One discovery run with the files provider, shared by the tests that read it (each leaves
    it as it found it): its folder and ``csro run``'s output."""
    tmp_path = tmp_path_factory.mktemp("discover")
    done = csro("run", config(tmp_path, budget=4, iterations=40), "--out", tmp_path / "run",
                "--set", "llm.provider=files", "--set", f"llm.path={replies(tmp_path)}",
                "--set", "evolve.diff_ratio=1.0")
    return tmp_path, done


@pytest.mark.slow
def test_discover_cfr_with_files_evolves_from_cfr_plus_and_reports_against_the_library(discovered):
    tmp_path, done = discovered
    assert "exploitability after K = 40" in done.stdout
    with RunStore.open(tmp_path / "run") as store:
        programs = {p["id"]: p for p in store.programs()}
        final = store.final()
        calls = store.llm_calls()
    assert len(calls) == 4
    statuses = sorted(p["status"] for p in programs.values())
    assert "apply_failed" in statuses and "seed" in statuses
    quadratic = [p for p in programs.values() if p["status"] in ("ok", "not_promising") and "** 2" in p["source"]]
    assert quadratic and all(p["parent"].startswith("seed") for p in quadratic)
    failed = next(p for p in programs.values() if p["status"] == "apply_failed")
    assert "not in the parent" in failed["error"] and failed["diff"] == MISPLACED
    # the final record compares the best program with the library on the train and held-out games
    assert set(final["games"]) == {"kuhn_2p", "kuhn_3p"}
    assert final["games"]["kuhn_3p"]["split"] == "test"
    kuhn = final["games"]["kuhn_2p"]["curves"]
    assert set(kuhn) == {"discovered", "cfr+", "dcfr", "pcfr+", "vad-cfr"}
    seed = next(p for p in programs.values() if p["mutation"] == "seed")
    assert final["seed_fitness"] == pytest.approx(-kuhn["cfr+"]["exploitability"][-1], rel=1e-12)
    html = (tmp_path / "run" / "report.html").read_text()
    assert "Best vs the library" in html and "Evolutionary search" in html and "<svg" in html
    assert seed["id"] in html


@pytest.mark.slow
def test_an_interrupted_discovery_resumes_to_the_same_result(discovered):
    tmp_path, _ = discovered
    path = tmp_path / "run" / "run.db"
    with RunStore.open(tmp_path / "run") as store:
        before = store.final()
    with sqlite3.connect(path) as conn:  # as if killed before the comparison was stored
        conn.execute("UPDATE run SET final = NULL")
    status = json.loads(csro("status", tmp_path / "run", "--json").stdout)
    assert status["kind"] == "discover" and not status["done"] and status["programs"] == 6
    assert status["llm"]["calls"] == 4 and status["best"]["id"] == before["best"]
    resumed = csro("resume", tmp_path / "run")
    assert "exploitability after K = 40" in resumed.stdout
    with RunStore.open(tmp_path / "run") as store:
        after = store.final()
        assert len(store.llm_calls()) == 4  # served from the store, none made again
    assert after["games"] == before["games"] and after["best"] == before["best"]
    (tmp_path / "run" / "report.html").unlink()
    assert csro("report", tmp_path / "run").stdout.strip() == str(tmp_path / "run" / "report.html")
    assert "Best vs the library" in (tmp_path / "run" / "report.html").read_text()


def test_bad_input_is_one_line(tmp_path):
    done = csro("run", config(tmp_path, train_games="no_such_game"), "--out", tmp_path / "x", check=False)
    assert done.returncode == 2 and done.stderr.startswith("error: unknown game set or suite game 'no_such_game'")
    done = csro("run", config(tmp_path, target="dqn"), "--out", tmp_path / "y", check=False)
    assert done.returncode == 2 and done.stderr.startswith("error: config field target: ")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.mark.slow
@pytest.mark.integration
def test_discover_cfr_with_the_embedded_model(tmp_path):
    """A real model writes the mutations: the smallest embedded one, SmolLM2-135M (the
    mechanics, not the programs; issue 39); fitness comes from real, sandboxed CFR runs."""
    done = csro("run", config(tmp_path, budget=2, iterations=30), "--out", tmp_path / "run",
                "--set", "llm.model=smollm2-135m", "--set", "max_tokens=128",
                "--set", "evolve.islands=1", "--set", "evolve.diff_ratio=1.0")
    assert "best program" in done.stdout
    with RunStore.open(tmp_path / "run") as store:
        calls = store.llm_calls()
        final = store.final()
        programs = store.programs()
    assert len(calls) == 2 and all(r.provider == "embedded" and not r.error for _, r in calls)
    assert len([p for p in programs if p["mutation"] != "seed"]) == 2
    assert final["fitness"] >= final["seed_fitness"]
    assert "discovered" in final["games"]["kuhn_3p"]["curves"]


UNIFORM = '''```python
import numpy as np


class MetaSolver:
    """Uniform over each population: PSRO becomes fictitious play."""

    def solve(self, payoffs):
        shape = np.asarray(payoffs[0]).shape
        return [[1.0] * n for n in shape]
```
'''


@pytest.mark.slow
def test_discover_psro_with_files_scores_meta_solvers_by_exact_psro(tmp_path):
    folder = tmp_path / "replies"
    folder.mkdir()
    (folder / "a.py").write_text(UNIFORM)
    csro("run", config(tmp_path, target="psro", test_games="leduc_2p", budget=2, iterations=4), "--out",
         tmp_path / "run", "--set", "llm.provider=files", "--set", f"llm.path={folder}",
         "--set", "evolve.diff_ratio=0.0", "--set", "evolve.islands=1")
    with RunStore.open(tmp_path / "run") as store:
        programs = store.programs()
        final = store.final()
    uniform = [p for p in programs if p["mutation"] == "rewrite" and p["stage"] == 3]
    assert uniform, [(p["status"], p["error"]) for p in programs]
    library = final["games"]["kuhn_2p"]["curves"]["uniform"]["exploitability"][-1]
    assert uniform[0]["scores"]["kuhn_2p"] == pytest.approx(library, rel=1e-9)
    assert final["games"]["leduc_2p"]["split"] == "test"
    assert set(final["games"]["leduc_2p"]["curves"]) == {"discovered", "uniform", "nash", "rm"}
