"""zero_shot with the REAL embedded model (Qwen2.5-Coder-0.5B): a valid RRPS program."""

import pytest

from csro.config import LLMConfig
from csro.evaluation.policy_ref import resolve
from csro.oracles import Opponent, get_oracle
from csro.oracles._context import ContextBuilder
from csro.oracles._grammar import grammar_for
from csro.oracles._propose import Proposer

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


def test_the_rrps_grammar_constrains_the_real_model(llm, make_ctx, rrps, real_arena):
    ctx, _ = make_ctx(llm)
    head, gbnf = grammar_for(rrps)
    messages = ContextBuilder().messages(rrps, list(ctx.target.opponents), ctx.config)
    reply = llm.complete(Proposer(ctx).request("grammar-0", messages, prefill_text=head, grammar=gbnf,
                                                stop=(), max_tokens=256))
    assert reply.ok, reply.error
    assert reply.text.strip().splitlines()[-1].strip().startswith("return ")  # the grammar's final rule
    assert real_arena.check([reply.full_text.removeprefix("```python\n")]) == [None]
