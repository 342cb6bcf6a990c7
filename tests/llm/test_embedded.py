"""The embedded provider with the real default model (Qwen2.5-Coder-1.5B-Instruct via llama.cpp);
the exactness of prefix reuse with SmolLM2-135M, model sampling with Qwen2.5-Coder-0.5B."""

from __future__ import annotations

import dataclasses

import pytest

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.games import load_game
from csro.llm import DEFAULT_MODEL, CallKey, LLMClient, LLMReply, LLMRequest, Message, ensure_model, make_provider
from csro.llm.embedded import EmbeddedProvider
from csro.llm.models import MODELS
from csro.oracles._grammar import grammar_for

POLICY_PROMPT = (Message("system", "You are an expert Python programmer."),
                 Message("user", "Repeated rock-paper-scissors. Write a Python class Agent with a method "
                                 "act(self, history) that returns 'R', 'P' or 'S'. history is the list of the "
                                 "opponent's past moves. Beat an opponent who mostly plays 'R'."))
pytestmark = [pytest.mark.slow, pytest.mark.integration]  # every test here uses the real model file

PREFILL = "```python\nclass Agent:\n    def act(self, history):\n"
EXACTNESS_MODEL = "smollm2-135m"  # reuse's exactness is the engine's, not the weights': the quickest model
SAMPLING_MODEL = "qwen2.5-coder-0.5b"  # the quicker model with published sampling settings


@pytest.fixture(scope="module")
def client():
    client = LLMClient(make_provider(LLMConfig(provider="embedded", threads=1)))
    yield client
    client.close()


def _request(sample=0, **kwargs):
    fields = {"prefill": PREFILL, "stop": ("\n```",), "max_tokens": 80, "temperature": 0.8, "seed": 3, **kwargs}
    return LLMRequest(CallKey(0, "propose", sample), POLICY_PROMPT, **fields)


def test_the_prompt_uses_the_models_chat_template_and_ends_in_the_prefill(client):
    prompt, stop = client.provider.prompt(POLICY_PROMPT, PREFILL)
    assert prompt.startswith("<|im_start|>system\nYou are an expert Python programmer.<|im_end|>\n<|im_start|>user\n")
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n" + PREFILL)
    assert "<|im_end|>" in stop


@pytest.mark.slow
def test_it_continues_a_prefilled_policy_and_counts_tokens(client):
    reply = client.complete(_request(max_tokens=40))
    assert reply.ok, reply.error
    assert reply.prefill == PREFILL and reply.text.strip()
    assert "```" not in reply.text  # stopped at the closing fence (if it came)
    assert reply.tokens_in > 50 and 0 < reply.tokens_out <= 40
    assert (reply.provider, reply.model) == ("embedded", DEFAULT_MODEL)
    # the estimate's counter (loaded model) gives llama.cpp's own prompt count
    assert client.provider.count_tokens(POLICY_PROMPT, PREFILL) == reply.tokens_in


def test_the_prompt_is_counted_with_the_vocabulary_alone_as_the_model_counts_it(client):
    alone = make_provider(LLMConfig(provider="embedded", threads=1))  # not loaded: vocabulary only
    count = alone.count_tokens(POLICY_PROMPT, PREFILL)
    assert alone._llama is None
    assert count == client.provider.count_tokens(POLICY_PROMPT, PREFILL) > 50


@pytest.mark.slow
def test_a_grammar_constrains_the_completion(client):
    grammar = 'root ::= "ROCK" | "PAPER"'
    replies = client.complete_many([_request(i, prefill="", grammar=grammar, max_tokens=8, temperature=1.5,
                                             seed=i) for i in range(4)])
    assert all(r.ok for r in replies), [r.error for r in replies]
    assert {r.text for r in replies} <= {"ROCK", "PAPER"}


@pytest.mark.slow
def test_model_sampling_samples_with_the_models_published_settings(client):
    # the quicker model: the settings are applied by the provider, whichever weights it holds
    tuned = LLMClient(make_provider(LLMConfig(provider="embedded", model=SAMPLING_MODEL, threads=1,
                                              model_sampling=True)))
    try:
        assert tuned.provider.sampling == MODELS[SAMPLING_MODEL].sampling is not None
        assert client.provider.sampling is None  # llama.cpp's defaults unless asked
        first, again = tuned.complete(_request(0, max_tokens=24)), tuned.complete(_request(0, max_tokens=24))
        assert first.ok and first.text.strip() and first.text == again.text
    finally:
        tuned.close()


SMALL_BATCH = 16  # so that the test prompts span several whole batches; the construction is the same at any size
RULES_PREFILL, RULES_GRAMMAR = grammar_for(load_game("rrps"))  # the rule grammar of make demo's rewrites


@pytest.fixture(scope="module")
def cold_and_warm():
    """Two providers over the same weights: one that evaluates every prompt from its first
    token, one that reuses the cached prefix."""
    cold, warm = (EmbeddedProvider(ensure_model(EXACTNESS_MODEL), threads=1, n_batch=SMALL_BATCH,
                                   reuse_prefix=reuse)
                  for reuse in (False, True))
    yield cold, warm
    cold.close()
    warm.close()


def _asking(tail: str, **kwargs) -> LLMRequest:
    """``_request(**kwargs)`` with ``tail`` appended to its user message."""
    return dataclasses.replace(_request(**kwargs), messages=POLICY_PROMPT[:-1] + (
        Message("user", POLICY_PROMPT[-1].content + tail),))


@pytest.mark.slow
def test_a_repair_that_quotes_the_reply_is_unchanged_by_the_cached_draft_issue_26(cold_and_warm):
    # The repair's prompt holds the draft's reply, whose cells were written one token at a
    # time while generating: those cells must never be reused.
    cold, warm = cold_and_warm
    draft = warm.complete(_request(), 300)
    repair = dataclasses.replace(_request(max_tokens=40), messages=POLICY_PROMPT + (
        Message("assistant", draft.full_text), Message("user", "That program is not valid. Fix it.")))
    warm_reply, cold_reply = warm.complete(repair, 300), cold.complete(repair, 300)
    again = warm.complete(repair, 300)  # the same prompt: all of it cached but its last, partial batch
    assert cold_reply.tokens_cached == 0
    assert 0 < warm_reply.tokens_cached <= draft.tokens_in // SMALL_BATCH * SMALL_BATCH
    assert warm_reply.tokens_cached < again.tokens_cached < again.tokens_in <= again.tokens_cached + SMALL_BATCH
    assert warm_reply.tokens_cached % SMALL_BATCH == again.tokens_cached % SMALL_BATCH == 0
    assert warm_reply.text == cold_reply.text == again.text


def test_a_generation_past_its_time_limit_is_an_error(client):
    reply = LLMClient(client.provider, timeout_s=0.01, retries=2).complete(_request(max_tokens=200))
    assert reply.error == "failed after 1 attempt: generation exceeded the time limit of 0.01 s"


def test_a_missing_gguf_path_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=f"^llm.path: no GGUF model file at {tmp_path / 'x.gguf'}$"):
        make_provider(LLMConfig(provider="embedded", path=str(tmp_path / "x.gguf")))


def test_a_gguf_path_names_the_model_after_its_file_unless_the_config_names_it(tmp_path):
    gguf = tmp_path / "my-model.gguf"
    gguf.write_bytes(b"GGUF")  # never loaded: the model is loaded on the first call
    assert make_provider(LLMConfig(provider="embedded", path=str(gguf))).model == "my-model"
    assert make_provider(LLMConfig(provider="embedded", path=str(gguf), model="mine")).model == "mine"


@pytest.mark.slow
def test_a_running_completion_is_reported_and_its_end_with_the_reply_tokens(client):
    heard = []
    client.provider.on_generation = lambda *args: heard.append(args)
    try:
        reply = client.complete(_request(seed=21, max_tokens=24))
    finally:
        client.provider.on_generation = None
    assert reply.ok and heard, reply.error
    *running, last = heard
    assert last[0] == str(reply.key) and last[1] == reply.tokens_out and last[3] is True
    assert all(key == str(reply.key) and not done and 0 <= tokens <= reply.tokens_out
               for key, tokens, _, done in running)
    assert [s for _, _, s, _ in heard] == sorted(s for _, _, s, _ in heard)


@pytest.mark.slow
@pytest.mark.parametrize("constrained", [False, True], ids=["free", "grammar"])
def test_samples_decoded_together_are_byte_identical_with_or_without_a_cached_prefix_issue_26(cold_and_warm,
                                                                                              constrained):
    """Free and under the rule grammar of make demo's rewrites: a group's replies are the same
    decoded from the first token, after another prompt that shares most of it, and again with
    all of the prompt cached but its last, partial batch. (A request alone: the repair test.)"""
    cold, warm = cold_and_warm
    extra = {"prefill": RULES_PREFILL, "grammar": RULES_GRAMMAR, "stop": ()} if constrained else {}
    group = [_asking(" Keep it short.", sample=k, seed=10 + k, max_tokens=40, **extra) for k in range(2)]
    expected = cold.complete_group(group, 300)
    # shares the system and most of the user message; only its prompt matters
    warm.complete(_asking(" Be clever.", seed=9, max_tokens=4, **extra), 300)
    after_other = warm.complete_group(group, 300)
    again = warm.complete_group(group, 300)
    assert all(isinstance(r, LLMReply) and r.text.strip() for r in expected), expected
    for replies in (after_other, again):
        assert [(r.text, r.tokens_out) for r in replies] == [(r.text, r.tokens_out) for r in expected]
        # the first sample evaluated the prompt's uncached batches; the others shared its cells
        assert [r.tokens_cached for r in replies[1:]] == [r.tokens_in for r in replies[1:]]
    assert expected[0].tokens_cached == 0
    assert 0 < after_other[0].tokens_cached < again[0].tokens_cached < again[0].tokens_in
    assert after_other[0].tokens_cached % SMALL_BATCH == again[0].tokens_cached % SMALL_BATCH == 0
    single = warm.complete(dataclasses.replace(group[0], max_tokens=8), 300)  # one request alone, as before
    assert single.text.strip() and single.tokens_in == expected[0].tokens_in
