"""One short real CSRO run with the embedded model (llama.cpp, Qwen2.5-Coder-0.5B)."""

from __future__ import annotations

import pytest

from csro.store import RunStore
from run_helpers import csro, kill_after_iteration, same_run, status, write_config


@pytest.mark.slow
def test_a_short_real_run_with_the_embedded_model(tmp_path):
    config = {
        "game": "rrps(num_throws=100)",
        "iterations": 1,
        "matches_per_cell": 2,
        "oracle": {"kind": "zero_shot", "max_repairs": 1, "max_tokens": 384},
        "llm": {"provider": "embedded", "model": "qwen2.5-coder-0.5b"},  # the mechanics; the default is tested in tests/llm
        "evaluation": {"population": ["builtin:rockbot", "builtin:copybot", "builtin:greenberg"],
                       "matches_per_opponent": 2},
    }
    directory = tmp_path / "run"
    done = csro("run", write_config(tmp_path / "c.yaml", config), "--out", directory)
    assert "candidate 1/propose/0" in done.stderr
    s = status(directory)
    assert s["done"] and s["llm"]["calls"] >= 1 and s["llm"]["tokens_out"] > 0
    with RunStore.open(directory) as store:
        calls = store.llm_calls()
        assert all(reply.provider == "embedded" and reply.model for _, reply in calls)
        assert str(calls[0][0].key) == "1/propose/0"
        candidates = [e["data"] for e in store.events("oracle_candidate")]
        assert candidates and all(c["valid"] == (c["error"] is None) for c in candidates)
        # The RRPS grammar fallback makes sure iteration 1 ends with a valid program: exactly
        # one policy was added, it is the best valid candidate, and it passed the sandbox
        # check (its check match is stored, and it did not forfeit).
        added = store.policies(0)[1:]
        assert len(added) == 1 and "class Agent" in added[0].source
        best = max((c for c in candidates if c["valid"]), key=lambda c: c["utility"])
        assert added[0].info["utility"] == best["utility"]
        name = f"cand-{added[0].sha256[:12]}"
        checks = [m for m in store.matches("check") if name in m.policies]
        assert checks and all(m.forfeit is None for m in checks)


@pytest.mark.slow
def test_kill_9_and_resume_of_an_embedded_run_ends_like_an_uninterrupted_one(tmp_path):
    """Issue 26: with prefix reuse, iteration 2 of the resumed run is decoded by a fresh process
    (a cold cache) and of the uninterrupted run after iteration 1 (a warm one); both must write
    the same text, so the runs end equal. Tiny settings: two iterations, two short samples each,
    decoded together (``EmbeddedProvider.complete_group``)."""
    config = {
        "game": "rrps(num_throws=100)",
        "iterations": 2,
        "seed": 3,
        "matches_per_cell": 2,
        "oracle": {"kind": "zero_shot", "samples": 2, "max_repairs": 0, "max_tokens": 200},
        "llm": {"provider": "embedded", "model": "qwen2.5-coder-0.5b", "threads": 1},
        "evaluation": {"population": ["builtin:rockbot", "builtin:copybot"], "matches_per_opponent": 2},
        "execution": {"processes": 2},
    }
    path = write_config(tmp_path / "c.yaml", config)
    kill_after_iteration(path, tmp_path / "killed")
    assert not status(tmp_path / "killed")["done"]
    csro("resume", tmp_path / "killed")
    csro("resume", same_run(tmp_path / "killed", tmp_path / "whole"))  # its secret (issue 37), played at once

    def outcome(directory):
        s = status(directory)
        with RunStore.open(directory) as store:
            calls = [(str(q.key), r.text) for q, r in store.llm_calls()]
        return {"population": [(m["sha256"], m["author"]) for m in s["population"]], "sigma": s["sigma"],
                "final": s["final"], "calls": calls}

    whole, resumed = outcome(tmp_path / "whole"), outcome(tmp_path / "killed")
    assert resumed == whole
    assert [key for key, _ in whole["calls"]][:2] == ["1/propose/0", "1/propose/1"]
    assert any(k.startswith("2/") for k, _ in whole["calls"])
