"""The hosted providers against a local scripted server: request shape, reply parsing, and
fault injection (timeout, 429, 500, 400, malformed JSON, empty body, missing fields), with the
API key never in an error. The servers are local fakes of the APIs' request shapes
(``test_*_request_shape*``); no hosted model is called."""

from __future__ import annotations

import re

import pytest

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm import CallKey, LLMClient, LLMRequest, Message, make_provider

from ._server import Answer, ScriptedServer

KEY = "sk-test-SECRET-1234567890"
REQUEST = LLMRequest(CallKey(2, "refine-1", 3), (Message("system", "You write RRPS policies."),
                                                 Message("user", "Write class Agent.")),
                     prefill="```python\nclass Agent:\n    ", stop=("\n```",), max_tokens=256, temperature=0.5,
                     seed=7)
OPENAI_OK = {"choices": [{"message": {"role": "assistant", "content": "class Agent: pass"}}],
             "usage": {"prompt_tokens": 31, "completion_tokens": 4}}
GEMINI_OK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "class "}, {"text": "Agent: pass"}]}}],
             "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 6}}
ANTHROPIC_OK = {"content": [{"type": "text", "text": "def act(self): return 'rock'"}],
                "usage": {"input_tokens": 50, "output_tokens": 8}}
OK = {"openai": OPENAI_OK, "gemini": GEMINI_OK, "anthropic": ANTHROPIC_OK}


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("CSRO_TEST_KEY", KEY)


def _client(kind, server, prompt_cache=True, **kwargs):
    config = LLMConfig(provider=kind, model="m-1", base_url=server.url, api_key_env="CSRO_TEST_KEY",
                       prompt_cache=prompt_cache)
    return LLMClient(make_provider(config), sleep=lambda s: None, **kwargs)


def test_openai_request_shape_and_reply():
    with ScriptedServer(Answer(OPENAI_OK)) as server:
        reply = _client("openai", server).complete(REQUEST)
    seen, = server.seen
    assert seen.path == "/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.body == {
        "model": "m-1", "max_tokens": 256, "temperature": 0.5, "seed": 7, "stop": ["\n```"],
        "messages": [{"role": "system", "content": "You write RRPS policies."},
                     {"role": "user", "content": "Write class Agent.\n\nStart your reply with exactly:\n"
                                                 "```python\nclass Agent:\n    "}]}
    assert (reply.text, reply.prefill, reply.tokens_in, reply.tokens_out) == ("class Agent: pass", "", 31, 4)
    assert (reply.provider, reply.model, reply.key) == ("openai", "m-1", REQUEST.key)


def test_openai_request_shape_without_a_key_for_local_servers(monkeypatch):
    with ScriptedServer(Answer(OPENAI_OK)) as server:
        provider = make_provider(LLMConfig(provider="openai", model="local", base_url=server.url))
        LLMClient(provider).complete(LLMRequest(CallKey(0, "propose"), (Message("user", "hi"),)))
    seen, = server.seen
    assert "authorization" not in seen.headers
    assert "stop" not in seen.body and seen.body["messages"] == [{"role": "user", "content": "hi"}]


def test_gemini_request_shape_and_reply():
    with ScriptedServer(Answer(GEMINI_OK)) as server:
        reply = _client("gemini", server).complete(REQUEST)
    seen, = server.seen
    assert seen.path == "/v1beta/models/m-1:generateContent"
    assert seen.headers["x-goog-api-key"] == KEY
    assert seen.body["systemInstruction"] == {"parts": [{"text": "You write RRPS policies."}]}
    instruction = "Write class Agent.\n\nStart your reply with exactly:\n```python\nclass Agent:\n    "
    assert seen.body["contents"] == [{"role": "user", "parts": [{"text": instruction}]}]
    assert seen.body["generationConfig"] == {"temperature": 0.5, "maxOutputTokens": 256, "stopSequences": ["\n```"],
                                             "seed": 7}
    assert (reply.text, reply.prefill, reply.tokens_in, reply.tokens_out) == ("class Agent: pass", "", 40, 6)


def test_gemini_request_shape_maps_assistant_turns_to_model():
    request = LLMRequest(CallKey(0, "repair-0-1"), (Message("user", "a"), Message("assistant", "b"),
                                                    Message("user", "c")))
    with ScriptedServer(Answer(GEMINI_OK)) as server:
        _client("gemini", server, prompt_cache=False).complete(request)
    assert [c["role"] for c in server.seen[0].body["contents"]] == ["user", "model", "user"]
    assert "systemInstruction" not in server.seen[0].body


def test_anthropic_request_shape_and_reply_with_native_prefill():
    with ScriptedServer(Answer(ANTHROPIC_OK)) as server:
        reply = _client("anthropic", server, prompt_cache=False).complete(REQUEST)
    seen, = server.seen
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == KEY and seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.body == {
        "model": "m-1", "max_tokens": 256, "temperature": 0.5, "system": "You write RRPS policies.",
        "stop_sequences": ["\n```"],
        "messages": [{"role": "user", "content": "Write class Agent."},
                     {"role": "assistant", "content": "```python\nclass Agent:"}]}  # trailing space refused by the API
    assert reply.prefill == "```python\nclass Agent:"
    assert reply.full_text == "```python\nclass Agent:def act(self): return 'rock'"
    assert (reply.tokens_in, reply.tokens_out) == (50, 8)


@pytest.mark.parametrize("kind", ["openai", "gemini", "anthropic"])
@pytest.mark.parametrize("fault, expected", [
    (Answer({"error": f"rate limited for {KEY}"}, status=429), "HTTP 429 after 3 attempts: POST "),
    (Answer({"error": "internal"}, status=500), "HTTP 500 after 3 attempts: POST "),
    (Answer(raw=b"{not json"), "failed after 3 attempts: POST .*: malformed JSON reply: {not json"),
    (Answer(raw=b""), "failed after 3 attempts: POST .*: empty reply"),
    (Answer({"unexpected": True}), "failed after 3 attempts: reply without the expected fields"),
])
def test_request_shape_fault_injection_is_retried_then_recorded(kind, fault, expected):
    recorded = []
    with ScriptedServer(fault) as server:
        client = _client(kind, server, retries=2, recorder=lambda q, r: recorded.append(r))
        reply = client.complete(REQUEST)
    assert len(server.seen) == 3
    assert reply.text == "" and reply.attempts == 3
    assert reply.latency_s > 0
    assert reply.error is not None and "\n" not in reply.error
    assert re.match(expected, reply.error), reply.error
    assert KEY not in reply.error and recorded == [reply]


@pytest.mark.parametrize("kind", ["openai", "gemini", "anthropic"])
def test_request_shape_fault_injection_transient_then_success(kind):
    with ScriptedServer(Answer(status=429, body={}), Answer(status=503, body={}), Answer(OK[kind])) as server:
        reply = _client(kind, server, retries=3).complete(REQUEST)
    assert reply.ok and reply.attempts == 3 and reply.text


@pytest.mark.parametrize("kind", ["openai", "gemini", "anthropic"])
def test_request_shape_fault_injection_timeout(kind):
    with ScriptedServer(Answer(OK[kind], delay_s=1.0), Answer(OK[kind])) as server:
        reply = _client(kind, server, retries=1, timeout_s=0.2).complete(REQUEST)
        assert reply.ok and reply.attempts == 2
        timed_out = _client(kind, server, retries=0, timeout_s=0.2)
        server.answers = [Answer(OK[kind], delay_s=1.0)]
        failed = timed_out.complete(REQUEST)
    assert failed.error.startswith("failed after 1 attempt: POST ") and "no reply within 0.2 s" in failed.error


@pytest.mark.parametrize("kind", ["openai", "gemini", "anthropic"])
def test_request_shape_a_client_error_is_not_retried_and_the_key_is_scrubbed(kind):
    with ScriptedServer(Answer({"error": {"message": f"invalid key {KEY}"}}, status=401)) as server:
        client = _client(kind, server, retries=3)
        reply = client.complete(REQUEST)
    assert len(server.seen) == 1
    assert reply.error.startswith("HTTP 401 after 1 attempt: POST ")
    assert "invalid key ***" in reply.error and KEY not in reply.error
    assert KEY not in repr(client.provider) and KEY not in str(client.provider)


def test_a_connection_error_is_retried():
    with ScriptedServer(Answer(OPENAI_OK)) as server:
        url = server.url
    client = LLMClient(make_provider(LLMConfig(provider="openai", model="m", base_url=url)), retries=1,
                       sleep=lambda s: None)
    reply = client.complete(REQUEST)
    assert reply.attempts == 2 and reply.error.startswith("failed after 2 attempts: POST /chat/completions: Connect")


@pytest.mark.parametrize("kind, env", [("openai", "OPENAI_API_KEY"), ("gemini", "GEMINI_API_KEY"),
                                       ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_missing_key_is_a_config_error_naming_the_variable(monkeypatch, kind, env):
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(ConfigError, match=f"^llm.api_key_env: environment variable {env} is not set$"):
        make_provider(LLMConfig(provider=kind, model="m"))


def test_a_hosted_provider_needs_a_model():
    with pytest.raises(ConfigError, match="^llm.model: the anthropic provider needs a model name$"):
        make_provider(LLMConfig(provider="anthropic", model=None, api_key_env="CSRO_TEST_KEY"))
