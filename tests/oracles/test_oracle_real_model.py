"""zero_shot with the REAL embedded model (Qwen2.5-Coder-0.5B): a valid RRPS program.

The RRPS grammar constraining the real model (the fallback's valid programs, checked in the
sandbox) is shown by the embedded run of tests/runs/test_embedded_run.py."""

import pytest

from csro.config import LLMConfig
from csro.evaluation.policy_ref import resolve
from csro.oracles import Opponent, get_oracle

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llm():
    from csro.llm import LLMClient, make_provider
    client = LLMClient(make_provider(LLMConfig(model="qwen2.5-coder-0.5b")), concurrency=1)  # the quicker model
    yield client
    client.close()


def test_zero_shot_writes_a_valid_rrps_program(llm, make_ctx, rrps, real_arena):
    opponents = [Opponent("p0", 1.0, resolve("builtin:rockbot", rrps), "throws ROCK every time")]
    # One sample (issue 39): two made the test 4-6 minutes, the second reply needing repairs.
    ctx, events = make_ctx(llm, opponents=opponents, prompt="prefill", samples=1, max_tokens=512)
    result = get_oracle("zero_shot").best_response(ctx)
    assert result.source is not None, result.reason
    assert real_arena.check([result.source]) == [None]
    assert result.call_keys and all(k.startswith("3/") for k in result.call_keys)

