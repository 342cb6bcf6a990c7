"""The embedded provider with the real default model (Qwen2.5-Coder-1.5B-Instruct via llama.cpp)."""

from __future__ import annotations

import pytest

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm import DEFAULT_MODEL, CallKey, LLMClient, LLMRequest, Message, make_provider
from csro.llm.models import MODELS

POLICY_PROMPT = (Message("system", "You are an expert Python programmer."),
                 Message("user", "Repeated rock-paper-scissors. Write a Python class Agent with a method "
                                 "act(self, history) that returns 'R', 'P' or 'S'. history is the list of the "
                                 "opponent's past moves. Beat an opponent who mostly plays 'R'."))
pytestmark = pytest.mark.integration  # every test here uses the real model file

PREFILL = "```python\nclass Agent:\n    def act(self, history):\n"


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
    reply = client.complete(_request())
    assert reply.ok, reply.error
    assert reply.prefill == PREFILL and reply.text.strip()
    assert "```" not in reply.text  # stopped at the closing fence
    assert reply.tokens_in > 50 and 0 < reply.tokens_out <= 80
    assert (reply.provider, reply.model) == ("embedded", DEFAULT_MODEL)
    # the estimate's counter (loaded model) gives llama.cpp's own prompt count
    assert client.provider.count_tokens(POLICY_PROMPT, PREFILL) == reply.tokens_in


def test_the_prompt_is_counted_with_the_vocabulary_alone_as_the_model_counts_it(client):
    alone = make_provider(LLMConfig(provider="embedded", threads=1))  # not loaded: vocabulary only
    count = alone.count_tokens(POLICY_PROMPT, PREFILL)
    assert alone._llama is None
    assert count == client.provider.count_tokens(POLICY_PROMPT, PREFILL) > 50


@pytest.mark.slow
def test_the_same_seed_gives_the_same_text_and_another_seed_may_differ(client):
    first, again, other = client.complete_many([_request(0), _request(1), _request(2, seed=4, temperature=1.5)])
    assert first.text == again.text
    assert first.text != other.text


@pytest.mark.slow
def test_a_grammar_constrains_the_completion(client):
    grammar = 'root ::= "ROCK" | "PAPER"'
    replies = client.complete_many([_request(i, prefill="", grammar=grammar, max_tokens=8, temperature=1.5,
                                             seed=i) for i in range(4)])
    assert all(r.ok for r in replies), [r.error for r in replies]
    assert {r.text for r in replies} <= {"ROCK", "PAPER"}


@pytest.mark.slow
def test_model_sampling_samples_with_the_models_published_settings(client):
    tuned = LLMClient(make_provider(LLMConfig(provider="embedded", threads=1, model_sampling=True)))
    try:
        assert tuned.provider.sampling == MODELS[DEFAULT_MODEL].sampling is not None
        assert client.provider.sampling is None  # llama.cpp's defaults unless asked
        first, again = tuned.complete_many([_request(0), _request(1)])  # same seed
        assert first.ok and first.text.strip() and first.text == again.text
    finally:
        tuned.close()


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
