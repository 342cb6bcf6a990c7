"""The hosted providers against a local scripted server: request shape, reply parsing, and
fault injection (timeout, 429, 500, an HTML 503, 400, 401/403/404, each API's overload
signals, Retry-After, malformed JSON, empty body, missing fields), with the API key never in
an error. The servers are local fakes of the APIs' request shapes
(``test_*_request_shape*``); no hosted model is called."""

from __future__ import annotations


import pytest

from csro.config import LLMConfig
from csro.errors import ConfigError, ProviderStopped
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
    return LLMClient(make_provider(config), **{"backoff_s": 0.0, **kwargs})


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
    (Answer({"error": f"rate limited for {KEY}"}, status=429), "HTTP 429"),
    (Answer({"error": "internal"}, status=500), "HTTP 500"),
    (Answer(raw=b"<html><body>503 Service Unavailable</body></html>", status=503), "HTTP 503"),
    (Answer(raw=b"{not json"), "malformed JSON reply: {not json"),
    (Answer(raw=b""), "empty reply"),
    (Answer({"unexpected": True}), "reply without the expected fields"),
])
def test_request_shape_fault_injection_is_retried_then_stops_unrecorded(kind, fault, expected):
    recorded = []
    with ScriptedServer(fault) as server:
        client = _client(kind, server, retries=2, recorder=lambda q, r: recorded.append(r))
        with pytest.raises(ProviderStopped) as stop:
            client.complete(REQUEST)
    assert len(server.seen) == 3 and stop.value.attempts == 3
    message = str(stop.value)
    assert message.startswith(f"{kind} at {server.url} still failing after 3 attempts (llm.retries = 2): ")
    assert expected in message and "\n" not in message and KEY not in message and recorded == []


@pytest.mark.parametrize("kind", ["openai", "gemini", "anthropic"])
def test_request_shape_fault_injection_transient_then_success(kind):
    with ScriptedServer(Answer(status=429, body={}), Answer(status=503, body={}), Answer(OK[kind])) as server:
        reply = _client(kind, server, retries=3).complete(REQUEST)
    assert reply.ok and reply.attempts == 3 and reply.text


@pytest.mark.parametrize("kind, status, body", [
    ("openai", 400, {"error": {"type": "requests", "code": "rate_limit_exceeded"}}),
    ("gemini", 400, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}),
    ("gemini", 409, {"error": {"code": 503, "status": "UNAVAILABLE"}}),
    ("anthropic", 400, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ("anthropic", 529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
])
def test_request_shape_each_apis_overload_signals_are_transient_whatever_the_status(kind, status, body):
    with ScriptedServer(Answer(body, status=status), Answer(OK[kind])) as server:
        reply = _client(kind, server).complete(REQUEST)
    assert reply.ok and reply.attempts == 2


@pytest.mark.parametrize("header, value, wait", [("Retry-After", "2", 2.0), ("retry-after-ms", "1500", 1.5),
                                                 ("Retry-After", "DATE+3", 3.0)])
def test_request_shape_retry_after_in_seconds_milliseconds_or_an_http_date(header, value, wait):
    import email.utils
    import time

    if value == "DATE+3":
        value = email.utils.formatdate(time.time() + 3.5, usegmt=True)  # whole seconds: 2.5..3.5 s from now
    heard = []
    with ScriptedServer(Answer({}, status=429, headers={header: value}), Answer(OPENAI_OK)) as server:
        client = _client("openai", server, on_wait=lambda *a: heard.append(a))
        assert client.complete(REQUEST).ok
    (provider, what, seconds), = heard
    assert what == "429" and wait - 0.6 <= seconds <= wait * 1.1 + 0.6


def test_request_shape_geminis_retry_info_is_a_retry_after():
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                      "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "4s"}]}}
    heard = []
    with ScriptedServer(Answer(body, status=429), Answer(GEMINI_OK)) as server:
        assert _client("gemini", server, on_wait=lambda *a: heard.append(a)).complete(REQUEST).ok
    (provider, what, seconds), = heard
    assert (provider, what) == (f"gemini at {server.url}", "429 RESOURCE_EXHAUSTED") and 4.0 <= seconds <= 4.4


@pytest.mark.parametrize("kind", ["openai", "gemini", "anthropic"])
def test_request_shape_fault_injection_timeout(kind):
    with ScriptedServer(Answer(OK[kind], delay_s=1.0), Answer(OK[kind])) as server:
        reply = _client(kind, server, retries=1, timeout_s=0.2).complete(REQUEST)
        assert reply.ok and reply.attempts == 2
        timed_out = _client(kind, server, retries=0, timeout_s=0.2)
        server.answers = [Answer(OK[kind], delay_s=1.0)]
        with pytest.raises(ProviderStopped, match="no reply within 0.2 s"):
            timed_out.complete(REQUEST)


@pytest.mark.parametrize("kind, status", [("openai", 401), ("gemini", 403), ("anthropic", 401), ("openai", 404),
                                          ("anthropic", 400)])
def test_request_shape_a_client_error_stops_at_once_and_the_key_is_scrubbed(kind, status):
    with ScriptedServer(Answer({"error": {"message": f"invalid key {KEY}"}}, status=status)) as server:
        client = _client(kind, server)
        with pytest.raises(ProviderStopped) as stop:
            client.complete(REQUEST)
    assert len(server.seen) == 1
    message = str(stop.value)
    assert message.startswith(f"{kind} at {server.url} refused the call: HTTP {status}: POST ")
    assert "invalid key ***" in message and KEY not in message
    named = "check the API key in environment variable CSRO_TEST_KEY, named by llm.api_key_env"
    assert (named in message) == (status in (401, 403))
    assert KEY not in repr(client.provider) and KEY not in str(client.provider)


@pytest.mark.parametrize("kind, status, body, said", [
    ("openai", 429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                               "code": "insufficient_quota"}}, "refused the call: HTTP 429: .*insufficient_quota"),
    ("gemini", 400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                               "status": "INVALID_ARGUMENT"}}, "check the API key in environment variable CSRO_TEST_KEY"),
])
def test_request_shape_an_exhausted_quota_or_geminis_invalid_key_stops_at_once(kind, status, body, said):
    with ScriptedServer(Answer(body, status=status)) as server:
        with pytest.raises(ProviderStopped, match=said):
            _client(kind, server).complete(REQUEST)
    assert len(server.seen) == 1


def test_a_refusal_of_a_local_server_without_a_key_says_no_key_was_sent():
    with ScriptedServer(Answer({"error": "auth"}, status=401)) as server:
        client = LLMClient(make_provider(LLMConfig(provider="openai", model="m", base_url=server.url)))
        with pytest.raises(ProviderStopped, match="no API key was sent: name its environment variable in "
                                                  "llm.api_key_env"):
            client.complete(REQUEST)


def test_request_shape_a_body_that_cannot_be_decoded_is_retried():
    garbled = Answer(raw=b"not gzip at all", headers={"Content-Encoding": "gzip"})
    with ScriptedServer(garbled, Answer(OPENAI_OK)) as server:
        reply = _client("openai", server).complete(REQUEST)
    assert reply.ok and reply.attempts == 2


def test_a_connection_error_is_retried_then_stops():
    with ScriptedServer(Answer(OPENAI_OK)) as server:
        url = server.url
    client = LLMClient(make_provider(LLMConfig(provider="openai", model="m", base_url=url)), retries=1,
                       backoff_s=0.0)
    with pytest.raises(ProviderStopped, match="still failing after 2 attempts .*: POST /chat/completions: Connect"):
        client.complete(REQUEST)


@pytest.mark.parametrize("kind, env", [("openai", "OPENAI_API_KEY"), ("gemini", "GEMINI_API_KEY"),
                                       ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_missing_key_is_a_config_error_naming_the_variable(monkeypatch, kind, env):
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(ConfigError, match=f"^llm.api_key_env: environment variable {env} is not set$"):
        make_provider(LLMConfig(provider=kind, model="m"))


def test_a_hosted_provider_needs_a_model():
    with pytest.raises(ConfigError, match="^llm.model: the anthropic provider needs a model name$"):
        make_provider(LLMConfig(provider="anthropic", model=None, api_key_env="CSRO_TEST_KEY"))
