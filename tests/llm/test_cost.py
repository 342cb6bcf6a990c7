"""Prices, call roles, the meter's caps, usage totals and the store's cost columns (our own
logic, with a scripted provider; whole runs are in tests/runs/test_budget.py)."""

from __future__ import annotations

import math
import sqlite3

import pytest

from csro.errors import BudgetExhausted, ConfigError
from csro.llm import (CallKey, LLMClient, LLMReply, Limits, Meter, Price, approx_prompt_tokens, price_of, role_of,
                      usage)
from csro.llm.budget import PROMPT_MARGIN
from csro.store import RunStore

from ._fakes import ScriptedProvider, request


@pytest.mark.parametrize("provider, model, expected", [
    ("openai", "gpt-4o-mini", Price(0.15, 0.60, 0.075)),
    ("openai", "gpt-4o-2024-08-06", Price(2.50, 10.00, 1.25)),  # a dated snapshot finds its family
    ("anthropic", "claude-sonnet-4-20250514", Price(3.00, 15.00, 0.30, 3.75)),
    ("gemini", "models/gemini-2.5-flash", Price(0.30, 2.50, 0.075)),
    ("anthropic", "claude-3-5-haiku-latest", Price(0.80, 4.00, 0.08, 1.00)),
])
def test_the_price_table(provider, model, expected):
    assert price_of(provider, model) == expected


@pytest.mark.parametrize("provider, model", [("openai", "o3-mini"), ("openai", "qwen2.5-coder"),
                                             ("gemini", "gpt-4o"), ("anthropic", "claude-sonnet-4-7")])
def test_an_unknown_model_costs_unknown_not_zero(provider, model):
    assert price_of(provider, model) is None
    meter = Meter(None)
    assert meter.priced(LLMReply(CallKey(1, "propose"), "x", provider, model, 100, 10)).cost_usd is None


def test_the_free_providers_and_the_override():
    for provider in ("embedded", "files", "replay"):
        assert price_of(provider, "anything").cost(10**6, 10**6) == 0.0
    override = Price(1.0, 2.0)
    assert price_of("openai", "gpt-4o", override) is override
    assert price_of("openai", "my-local", override).cost(1000, 500, tokens_cached=400) == pytest.approx(2e-3)


@pytest.mark.parametrize("step, role", [
    ("describe-p3", "description"), ("propose", "proposal"), ("repair-0-1", "repair"), ("refine-4", "refinement"),
    ("grammar-2", "fallback"), ("diagnose-1", "diagnosis"), ("rewrite-3", "rewrite"), ("evolve-0-1", "mutation"),
    ("seat2-repair-0-1", "repair"), ("seat0-propose", "proposal"), ("something", "other")])
def test_the_role_of_each_oracle_step(step, role):
    assert role_of(step) == role


def test_a_refused_batch_sends_nothing_and_says_which_cap():
    provider = ScriptedProvider()
    client = LLMClient(provider, meter=Meter(Price(1.0, 1.0), Limits(calls=3)))
    client.complete_many([request(1, "propose", s) for s in range(2)])
    with pytest.raises(BudgetExhausted, match=r"^llm.budget.calls = 3 reached: 2 calls spent, the next 2 call\(s\)"):
        client.complete_many([request(2, "propose", s) for s in range(2)])
    assert len(provider.attempts) == 2 and len(provider.submitted) == 2  # nothing announced either
    client.complete(request(2, "propose"))
    assert client.meter.spent.calls == 3


def test_the_worst_case_of_a_call_decides_tokens_and_dollars():
    q = request(1, "refine-1", text="x" * 800)
    prompt = math.ceil(PROMPT_MARGIN * approx_prompt_tokens(q))
    assert prompt == math.ceil(1.25 * (200 + 4))  # 800 characters and one message's overhead
    worst = prompt + q.max_tokens
    meter = Meter(Price(1e6, 0.0), Limits(tokens=worst))  # $1 per input token
    meter.admit([q])
    meter.count(LLMReply(q.key, "", "p", "m", tokens_in=1, tokens_out=0))
    with pytest.raises(BudgetExhausted, match="tokens"):
        meter.admit([q])
    dollars = Meter(Price(1e6, 0.0), Limits(usd=prompt - 0.5))
    with pytest.raises(BudgetExhausted, match="usd"):
        dollars.admit([q])


def test_role_caps_count_only_their_role_and_recorded_calls_count_but_are_never_refused():
    recorded = {request(1, "propose").key: LLMReply(request(1, "propose").key, "old", "p", "m", 50, 5, cost_usd=0.25)}
    provider = ScriptedProvider()
    client = LLMClient(provider, recorded=recorded.get,
                       meter=Meter(Price(1.0, 1.0), roles={"repair": Limits(calls=1), "proposal": Limits(calls=1)}))
    client.complete(request(1, "propose"))  # replayed: counted, not refused, not sent
    client.complete(request(1, "repair-0-0"))
    with pytest.raises(BudgetExhausted, match=r"^llm.budget.roles.repair.calls = 1") as refused:
        client.complete(request(1, "repair-0-1"))
    assert refused.value.field == "llm.budget.roles.repair.calls"
    with pytest.raises(BudgetExhausted, match=r"^llm.budget.roles.proposal.calls = 1"):
        client.complete(request(2, "propose"))
    client.complete(request(2, "refine-1"))
    assert provider.attempts == [CallKey(1, "repair-0-0"), CallKey(2, "refine-1")]
    snapshot = client.meter.snapshot()
    assert snapshot["calls"] == 3 and snapshot["usd"] == pytest.approx(0.25 + 2 * 15e-6)
    assert snapshot["roles"]["proposal"] == {"usd": 0.25, "tokens": 55, "calls": 1}


def test_a_dollar_cap_needs_a_price():
    with pytest.raises(ConfigError, match="llm.budget.usd"):
        Meter(None, Limits(usd=1.0))
    with pytest.raises(ConfigError, match="llm.budget.usd"):
        Meter(None, roles={"repair": Limits(usd=1.0)})
    Meter(None, Limits(calls=5))  # calls and tokens need no price


def test_usage_per_role_and_iteration_with_unknown_cost():
    replies = [LLMReply(CallKey(1, "propose"), "x = 1\n```", "p", "m", 100, 10, 2.0, cost_usd=0.5, prefill="```python\n",
                        attempts=3, waited_s=1.5),
               LLMReply(CallKey(1, "repair-0-0"), "", "p", "m", 0, 0, 1.0, error="HTTP 500", cost_usd=0.0),
               LLMReply(CallKey(2, "propose"), "Here:\n```python\nx=1  # the same program\n```", "p", "m", 200, 20,
                        3.0, tokens_cached=150, cost_usd=None),
               LLMReply(CallKey(2, "propose-1"), "no code at all", "p", "m", 50, 5, 1.0, cost_usd=0.0)]
    u = usage(replies)
    assert u["total"] == {"calls": 4, "errors": 1, "programs": 1, "tokens_in": 350, "tokens_cached": 150,
                          "tokens_out": 35, "cost_usd": None, "seconds": 7.0, "retried": 1, "waited_s": 1.5}
    assert u["roles"]["repair"]["cost_usd"] == 0.0 and u["roles"]["proposal"]["cost_usd"] is None
    assert [(g["iteration"], g["calls"], g["programs"], g["cost_usd"]) for g in u["iterations"]] == [
        (1, 2, 1, 0.5), (2, 2, 1, None)]


OLD_LLM_CALLS = """CREATE TABLE llm_calls (
    seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    messages TEXT NOT NULL, prefill TEXT NOT NULL, grammar TEXT, stop TEXT NOT NULL,
    max_tokens INTEGER NOT NULL, temperature REAL NOT NULL, seed INTEGER NOT NULL,
    text TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,
    tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, latency_s REAL NOT NULL,
    attempts INTEGER NOT NULL, error TEXT, reply_prefill TEXT NOT NULL)"""


def test_a_run_store_made_before_the_cost_columns_opens_and_reads_its_calls(tmp_path):
    with RunStore.create(tmp_path, {"game": "rrps"}):
        pass
    conn = sqlite3.connect(tmp_path / "run.db")  # rebuild llm_calls as older csro made it
    conn.executescript("DROP TABLE llm_calls;" + OLD_LLM_CALLS + ";")
    for i, provider in enumerate(("embedded", "openai")):
        conn.execute("INSERT INTO llm_calls (key, messages, prefill, stop, max_tokens, temperature, seed, text, "
                     "provider, model, tokens_in, tokens_out, latency_s, attempts, reply_prefill) "
                     "VALUES (?, '[]', '', '[]', 64, 0.8, 0, 'x', ?, 'm', 100, 10, 1.0, 1, '')",
                     (f"{i}/propose/0", provider))
    conn.commit()
    conn.close()
    with RunStore.open(tmp_path) as store:
        replies = [r for _, r in store.llm_calls()]
        store.add_llm_call(request(3), LLMReply(request(3).key, "y", "openai", "gpt-4o", 10, 1, tokens_cached=4,
                                                cost_usd=1e-5))
        assert [(r.provider, r.tokens_cached, r.cost_usd) for r in replies] == [("embedded", 0, 0.0),
                                                                                ("openai", 0, None)]
        assert store.llm_call(request(3).key).tokens_cached == 4
    with RunStore.open(tmp_path) as store:  # the migration is done once
        assert len(store.llm_calls()) == 3
