"""One short real AOR round with an embedded model (llama.cpp, SmolLM2-135M, the smallest: the
mechanics, not the controller; issue 39): one LLM call with a small budget; whatever the
model writes is checked in the sandbox first."""

from __future__ import annotations

import pytest

from aor_helpers import csro, files_config
from aor_helpers import EXAMPLES
from csro.robots import AorStore

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_one_rewrite_round_with_the_embedded_model(tmp_path):
    config = files_config(tmp_path, rounds=1, episodes=1, horizon=60, max_repairs=0, max_tokens=96,
                          initial_controller=str(EXAMPLES / "lift.py"), llm={"provider": "embedded", "model": "smollm2-135m"})
    directory = tmp_path / "run"
    done = csro("run", config, "--out", directory, timeout=280)
    assert "report: " in done.stdout
    with AorStore.open(directory) as store:
        calls = store.llm_calls()
        assert [str(q.key) for q, _ in calls] == ["1/rewrite/0"]  # c0 came from the file: one call in all
        request, reply = calls[0]
        assert reply.provider == "embedded" and reply.model and reply.tokens_out > 0 and reply.error is None
        assert "CURRENT CONTROLLER c0 (success 100%" in request.messages[-1].content
        c1 = {c.id: c for c in store.controllers()}["c1"]
        assert c1.call_keys == ("1/rewrite/0",)
        # Whatever the small model wrote: a rejected controller has its reason and no episode,
        # and the best is c0; a valid one was evaluated and the best is the better of the two.
        def rank(cid):
            outcome = store.episodes(cid)[0]
            return (outcome["success"], outcome["progress"], int(cid[1:]))

        if not c1.valid:
            assert c1.error and store.episodes("c1") == {} and store.final()["best"] == "c0"
        else:
            assert c1.error is None and len(store.episodes("c1")) == 1
            assert store.final()["best"] == max(("c0", "c1"), key=rank)
