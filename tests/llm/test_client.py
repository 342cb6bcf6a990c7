"""LLMClient: retries and backoff, failures recorded not raised, recording, on_submit, concurrency."""

from __future__ import annotations

import threading

import pytest

from ._fakes import GroupingProvider, ScriptedProvider, request
from csro.llm import LLMClient, ProviderError


def _client(provider, **kwargs):
    sleeps: list[float] = []
    return LLMClient(provider, sleep=sleeps.append, **kwargs), sleeps


@pytest.mark.parametrize("failure", [ProviderError("busy", retryable=True, status=429),
                                     ProviderError("oops", retryable=True, status=500),
                                     ProviderError("no reply within 1 s", retryable=True)])
def test_transient_failures_are_retried_with_exponential_backoff(failure):
    provider = ScriptedProvider([failure, failure, "fine"])
    client, sleeps = _client(provider, retries=3, backoff_s=0.5)
    reply = client.complete(request())
    assert reply.ok and reply.text == "fine 0/propose/0"
    assert reply.attempts == 3
    assert sleeps == [0.5, 1.0]


def test_a_non_retryable_error_stops_at_once():
    provider = ScriptedProvider([ProviderError("bad request", retryable=False, status=400), "never"])
    client, sleeps = _client(provider)
    reply = client.complete(request())
    assert reply.error == "HTTP 400 after 1 attempt: bad request"
    assert reply.text == "" and reply.attempts == 1 and sleeps == []
    assert len(provider.attempts) == 1


def test_all_attempts_failing_gives_a_recorded_error_reply():
    recorded = []
    provider = ScriptedProvider([ProviderError("unavailable\nupstream", retryable=True, status=503)] * 4)
    client, sleeps = _client(provider, retries=3, backoff_s=1.0, recorder=lambda q, r: recorded.append((q, r)))
    reply = client.complete(request())
    assert reply.error == "HTTP 503 after 4 attempts: unavailable upstream"
    assert (reply.text, reply.attempts, reply.provider, reply.model) == ("", 4, "scripted", "fake")
    assert sleeps == [1.0, 2.0, 4.0]
    assert recorded == [(request(), reply)]
    assert client.stats()["errors"] == 1


def test_a_provider_exception_is_survived_and_not_retried():
    provider = ScriptedProvider([RuntimeError("segfault-ish"), "never"])
    client, _ = _client(provider)
    reply = client.complete(request())
    assert reply.error == "failed after 1 attempt: RuntimeError: segfault-ish"
    assert len(provider.attempts) == 1


def test_recorded_replies_are_served_without_calling_or_recording_again():
    provider = ScriptedProvider()
    first = LLMClient(provider).complete(request(sample=0))
    store = {first.key: first}
    recorded = []
    client = LLMClient(provider, recorded=store.get, recorder=lambda q, r: recorded.append(r.key))
    replies = client.complete_many([request(sample=0), request(sample=1)])
    assert replies[0] is first
    assert provider.attempts == [first.key, request(sample=1).key]
    assert recorded == [request(sample=1).key]
    stats = client.stats()
    assert (stats["calls"], stats["replayed"]) == (1, 1)
    # on_submit is announced for every request, recorded ones included, in request order.
    assert provider.submitted == [first.key, first.key, request(sample=1).key]


def test_complete_many_keeps_request_order_and_records_in_it():
    # Later requests finish first: the recorder must still see request order.
    order = []
    provider = ScriptedProvider(delay_s=0.0)
    delays = {0: 0.3, 1: 0.2, 2: 0.1, 3: 0.0}
    original = provider.complete

    def slow(req, timeout_s):
        threading.Event().wait(delays[req.key.sample])
        return original(req, timeout_s)

    provider.complete = slow
    client = LLMClient(provider, concurrency=4, recorder=lambda q, r: order.append(q.key.sample))
    requests = [request(sample=i) for i in range(4)]
    replies = client.complete_many(requests)
    assert [r.key for r in replies] == [q.key for q in requests]
    assert order == [0, 1, 2, 3]
    assert provider.submitted == [q.key for q in requests]


def test_calls_run_in_parallel_up_to_the_concurrency():
    provider = ScriptedProvider(delay_s=0.2)
    LLMClient(provider, concurrency=4).complete_many([request(sample=i) for i in range(8)])
    assert provider.peak == 4


def test_the_providers_max_concurrency_caps_the_pool():
    provider = ScriptedProvider(delay_s=0.05, max_concurrency=1)
    client = LLMClient(provider, concurrency=8)
    assert client.workers == 1
    client.complete_many([request(sample=i) for i in range(4)])
    assert provider.peak == 1


def test_stats_count_provider_calls_tokens_errors_and_latency():
    provider = ScriptedProvider([ProviderError("no", retryable=False)], delay_s=0.01)
    client = LLMClient(provider)
    client.complete_many([request(sample=i) for i in range(3)])
    stats = client.stats()
    assert {k: stats[k] for k in ("calls", "tokens_in", "tokens_out", "errors", "replayed")} == {
        "calls": 3, "tokens_in": 20, "tokens_out": 10, "errors": 1, "replayed": 0}
    assert stats["latency_s"] >= 0.02


def test_duplicate_keys_in_one_batch_are_refused_and_close_closes_the_provider():
    provider = ScriptedProvider()
    client = LLMClient(provider)
    with pytest.raises(ValueError, match="same call key"):
        client.complete_many([request(), request()])
    client.close()
    assert provider.closed


def test_recorded_lookups_run_in_the_calling_thread_in_request_order():
    looked_up = []

    def recorded(key):
        looked_up.append((key.sample, threading.current_thread() is threading.main_thread()))
        return None

    LLMClient(ScriptedProvider(delay_s=0.01), concurrency=4, recorded=recorded).complete_many(
        [request(sample=i) for i in range(4)])
    assert looked_up == [(0, True), (1, True), (2, True), (3, True)]


def test_on_generation_reaches_a_provider_that_reports_progress_and_spares_one_that_does_not():
    class Reporting(ScriptedProvider):
        on_generation = None

    heard = []
    reporting, plain = Reporting(["a"]), ScriptedProvider(["b"])
    LLMClient(reporting, on_generation=lambda *a: heard.append(a))
    LLMClient(plain, on_generation=lambda *a: heard.append(a))
    assert reporting.on_generation is not None and not hasattr(plain, "on_generation")
    reporting.on_generation("1/propose/0", 3, 1.5, False)
    assert heard == [("1/propose/0", 3, 1.5, False)]


def test_a_grouping_provider_decodes_the_whole_batch_even_where_part_of_it_is_recorded():
    # A reply then depends on its group, so a resumed run must decode the same group again.
    provider = GroupingProvider()
    batch = [request(sample=i) for i in range(3)]
    uninterrupted = LLMClient(provider).complete_many(batch)
    store, recorded = {uninterrupted[0].key: uninterrupted[0]}, []
    client = LLMClient(provider, recorded=store.get, recorder=lambda q, r: recorded.append(r.key))
    resumed = client.complete_many(batch)
    assert provider.groups == [[q.key for q in batch]] * 2
    assert [r.text for r in resumed] == [r.text for r in uninterrupted] and resumed[0] is uninterrupted[0]
    assert recorded == [batch[1].key, batch[2].key]  # the recorded reply is kept, not recorded again
    assert (client.stats()["calls"], client.stats()["replayed"]) == (2, 1)
    client.complete_many(batch[:1])  # a single request, recorded: nothing is decoded
    assert len(provider.groups) == 2 and not provider.attempts


def test_a_grouping_provider_gets_a_single_request_alone_and_its_failures_are_recorded_per_request():
    provider = GroupingProvider([ProviderError("busy", status=503, retryable=True)])
    client = LLMClient(provider, sleep=lambda s: None)
    replies = client.complete_many([request(sample=0), request(sample=1, text="fail")])
    assert len(provider.groups) == 2  # the retryable failure of the whole group, then its retry
    assert replies[0].ok and replies[0].attempts == 2
    assert replies[1].error == "failed after 2 attempts: this one failed"
    assert client.complete(request(sample=2)).ok and provider.attempts == [request(sample=2).key]
