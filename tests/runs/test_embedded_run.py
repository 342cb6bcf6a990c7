"""One short real CSRO run with the embedded model (llama.cpp, Qwen2.5-Coder-0.5B)."""

from __future__ import annotations

import pytest

from csro.store import RunStore
from run_helpers import csro, status, write_config


@pytest.mark.slow
def test_a_short_real_run_with_the_embedded_model(tmp_path):
    config = {
        "game": "rrps(num_throws=100)",
        "iterations": 1,
        "matches_per_cell": 2,
        "oracle": {"kind": "zero_shot", "max_repairs": 1, "max_tokens": 384},
        "llm": {"provider": "embedded"},
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
        # Whatever the small model wrote, only programs that passed the sandbox check entered.
        for record in store.policies(0)[1:]:
            assert record.source and "class Agent" in record.source
        outcomes = store.events("oracle_candidate") + store.events("oracle_failed")
        assert outcomes
