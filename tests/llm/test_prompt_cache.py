"""Prompt caching against scripted local servers that check the request shape: Anthropic's
``cache_control`` breakpoints, Gemini's ``cachedContents`` entry and ``cachedContent`` field,
OpenAI's cached-token usage; the cached token counts parsed, recorded and priced as cached.
No hosted model is called."""

from __future__ import annotations

import pytest

from csro.config import LLMConfig
from csro.llm import CallKey, LLMClient, LLMRequest, Message, Meter, Price, make_provider

from ._server import Answer, ScriptedServer

SYSTEM, RULES = "You write RRPS policies.", "Rules, API and opponents: the stable prefix."
FIRST = LLMRequest(CallKey(1, "propose"), (Message("system", SYSTEM), Message("user", RULES)), max_tokens=64, seed=1)
REPAIR = LLMRequest(CallKey(1, "repair-0-0"), FIRST.messages + (Message("assistant", "class Agent: oops"),
                                                                 Message("user", "Fix it.")), max_tokens=64, seed=2)
PRICE = Price(input=2.0, output=10.0, cached_input=0.5, cache_write=2.5)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("CSRO_TEST_KEY", "sk-test-cache")


def _client(kind: str, server: ScriptedServer, **config) -> LLMClient:
    llm = LLMConfig(provider=kind, model="m-1", base_url=server.url, api_key_env="CSRO_TEST_KEY", retries=0, **config)
    return LLMClient(make_provider(llm), meter=Meter(PRICE), sleep=lambda s: None)


def test_anthropic_request_shape_has_cache_control_on_the_stable_prefix_and_parses_cache_usage():
    answer = {"content": [{"type": "text", "text": "class Agent: pass"}],
              "usage": {"input_tokens": 20, "output_tokens": 10, "cache_read_input_tokens": 1000,
                        "cache_creation_input_tokens": 300}}
    with ScriptedServer(Answer(answer)) as server:
        reply = _client("anthropic", server).complete(REPAIR)
    body = server.seen[0].body
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"][0] == {"role": "user", "content": [
        {"type": "text", "text": RULES, "cache_control": {"type": "ephemeral"}}]}
    assert body["messages"][1:] == [{"role": "assistant", "content": "class Agent: oops"},
                                    {"role": "user", "content": "Fix it."}]  # the varying tail: no breakpoint
    assert (reply.tokens_in, reply.tokens_cached, reply.tokens_cache_write, reply.tokens_out) == (1320, 1000, 300, 10)
    assert reply.cost_usd == pytest.approx((20 * 2.0 + 1000 * 0.5 + 300 * 2.5 + 10 * 10.0) / 1e6)


def test_anthropic_request_shape_without_prompt_cache_sends_no_cache_control():
    answer = {"content": [{"type": "text", "text": "x"}], "usage": {"input_tokens": 5, "output_tokens": 1}}
    with ScriptedServer(Answer(answer)) as server:
        _client("anthropic", server, prompt_cache=False).complete(REPAIR)
    assert "cache_control" not in str(server.seen[0].body)


def test_gemini_request_shape_creates_a_cached_content_once_and_names_it_in_each_continuation():
    created = {"name": "cachedContents/abc123", "model": "models/m-1"}
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "class Agent: pass"}]}}],
              "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 30, "cachedContentTokenCount": 1100}}
    second = LLMRequest(CallKey(1, "repair-0-0", 1), REPAIR.messages, max_tokens=64, seed=3)
    with ScriptedServer(Answer(answer), routes={"/v1beta/cachedContents": Answer(created)}) as server:
        client = _client("gemini", server)
        first = client.complete(FIRST)  # a chat of one user message: nothing to cache yet
        replies = client.complete_many([REPAIR, second])
    paths = [s.path for s in server.seen]
    assert paths == ["/v1beta/models/m-1:generateContent", "/v1beta/cachedContents"] + \
        ["/v1beta/models/m-1:generateContent"] * 2  # one entry for the two continuations
    cache = next(s.body for s in server.seen if s.path == "/v1beta/cachedContents")
    assert cache == {"model": "models/m-1", "ttl": "600s", "systemInstruction": {"parts": [{"text": SYSTEM}]},
                     "contents": [{"role": "user", "parts": [{"text": RULES}]}]}
    generate = [s.body for s in server.seen if s.path.endswith(":generateContent")]
    assert "cachedContent" not in generate[0] and generate[0]["systemInstruction"] == {"parts": [{"text": SYSTEM}]}
    for body in generate[1:]:
        assert body["cachedContent"] == "cachedContents/abc123" and "systemInstruction" not in body
        assert body["contents"] == [{"role": "model", "parts": [{"text": "class Agent: oops"}]},
                                    {"role": "user", "parts": [{"text": "Fix it."}]}]
    assert first.tokens_cached == 1100  # the API's implicit caching reports cached tokens too
    assert [(r.tokens_in, r.tokens_cached) for r in replies] == [(1200, 1100)] * 2
    assert replies[0].cost_usd == pytest.approx((100 * 2.0 + 1100 * 0.5 + 30 * 10.0) / 1e6)


def test_gemini_request_shape_falls_back_to_the_whole_chat_when_caching_is_refused():
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}],
              "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 2}}
    refused = Answer({"error": {"message": "Cached content is too small"}}, status=400)
    with ScriptedServer(Answer(answer), routes={"/v1beta/cachedContents": refused}) as server:
        client = _client("gemini", server)
        reply = client.complete(REPAIR)
        client.complete(LLMRequest(CallKey(1, "repair-1-0"), REPAIR.messages, max_tokens=64))
    assert reply.ok and reply.tokens_cached == 0
    assert [s.path for s in server.seen] == ["/v1beta/cachedContents"] + ["/v1beta/models/m-1:generateContent"] * 2
    assert all("cachedContent" not in s.body and len(s.body["contents"]) == 3 for s in server.seen[1:])


def test_openai_request_shape_keeps_the_stable_prefix_first_and_parses_cached_tokens():
    answer = {"choices": [{"message": {"role": "assistant", "content": "class Agent: pass"}}],
              "usage": {"prompt_tokens": 1500, "completion_tokens": 40,
                        "prompt_tokens_details": {"cached_tokens": 1280}}}
    with ScriptedServer(Answer(answer)) as server:
        reply = _client("openai", server).complete(REPAIR)
    messages = server.seen[0].body["messages"]
    assert messages[:2] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": RULES}]
    assert (reply.tokens_in, reply.tokens_cached, reply.tokens_out) == (1500, 1280, 40)
    assert reply.cost_usd == pytest.approx((220 * 2.0 + 1280 * 0.5 + 40 * 10.0) / 1e6)
