"""LLMClient: transient failures waited out behind the provider's gate within the retry budget,
what cannot pass stops the run unrecorded, other failures recorded not raised, recording,
on_submit, concurrency."""

from __future__ import annotations

import threading

import pytest

from ._fakes import FakeTime, GroupingProvider, ScriptedProvider, request
from csro.errors import ProviderStopped
from csro.llm import LLMClient, ProviderError
from csro.llm.retry import Gate


def _client(provider, **kwargs):
    time = FakeTime()
    return LLMClient(provider, sleep=time.sleep, clock=time.now, **kwargs), time


@pytest.mark.parametrize("failure", [ProviderError("busy", retryable=True, status=429),
                                     ProviderError("oops", retryable=True, status=529),
                                     ProviderError("no reply within 1 s", retryable=True)])
def test_transient_failures_are_waited_out_with_jittered_exponential_backoff(failure):
    provider = ScriptedProvider([failure, failure, "fine"])
    client, time = _client(provider, backoff_s=0.5)
    reply = client.complete(request())
    assert reply.ok and reply.text == "fine 0/propose/0"
    assert reply.attempts == 3
    assert 0.25 + 0.5 <= sum(time.sleeps) <= 0.5 + 1.0  # each wait in the upper half of 0.5 * 2**n
    assert reply.waited_s == pytest.approx(sum(time.sleeps)) and reply.latency_s >= reply.waited_s


def test_a_servers_retry_after_is_honoured_when_longer_than_the_backoff():
    provider = ScriptedProvider([ProviderError("slow down", retryable=True, status=429, retry_after=7.0), "fine"])
    client, time = _client(provider, backoff_s=0.1)
    assert client.complete(request()).ok and 7.0 <= sum(time.sleeps) <= 7.7


def test_a_burst_longer_than_a_fixed_count_of_retries_is_waited_out_within_the_budget():
    burst = [ProviderError("busy", retryable=True, status=429, retry_after=1.0)] * 20
    provider = ScriptedProvider([*burst, "fine"])
    client, time = _client(provider, retry_budget_s=60.0)
    reply = client.complete(request())
    assert reply.ok and reply.attempts == 21 and sum(time.sleeps) < 60.0


def test_a_failure_that_outlasts_the_retry_budget_stops_the_run_unrecorded():
    recorded = []
    provider = ScriptedProvider([ProviderError("unavailable\nupstream", retryable=True, status=503)] * 1000)
    client, time = _client(provider, retry_budget_s=30.0, recorder=lambda q, r: recorded.append((q, r)))
    with pytest.raises(ProviderStopped, match=r"^scripted still failing after \d+ attempts over [\d.]+ s \(the next "
                                              r"wait, [\d.]+ s, would pass llm.retry_budget_s = 30\): HTTP 503: "
                                              r"unavailable upstream$") as stop:
        client.complete(request())
    assert sum(time.sleeps) <= 30.0 and stop.value.waited_s == pytest.approx(sum(time.sleeps))
    assert stop.value.attempts == len(provider.attempts) > 5
    assert recorded == [] and client.stats()["calls"] == 0


def test_llm_retries_caps_the_retries_of_a_call():
    provider = ScriptedProvider([ProviderError("busy", retryable=True, status=429)] * 5)
    client, _ = _client(provider, retries=2)
    with pytest.raises(ProviderStopped, match=r"still failing after 3 attempts \(llm.retries = 2\): HTTP 429: busy$"):
        client.complete(request())
    assert len(provider.attempts) == 3


def test_a_refusal_no_retry_fixes_stops_at_once():
    provider = ScriptedProvider([ProviderError("bad request", retryable=False, status=400), "never"])
    client, time = _client(provider)
    with pytest.raises(ProviderStopped, match="^scripted refused the call: HTTP 400: bad request$"):
        client.complete(request())
    assert len(provider.attempts) == 1 and time.sleeps == []


def test_a_failure_that_is_the_calls_own_outcome_is_recorded_not_retried():
    recorded = []
    provider = ScriptedProvider([ProviderError("no recorded reply for call 0/propose/0", retryable=False)])
    client, time = _client(provider, recorder=lambda q, r: recorded.append((q, r)))
    reply = client.complete(request())
    assert reply.error == "failed after 1 attempt: no recorded reply for call 0/propose/0"
    assert (reply.text, reply.attempts, reply.provider, reply.model) == ("", 1, "scripted", "fake")
    assert recorded == [(request(), reply)] and time.sleeps == []
    assert client.stats()["errors"] == 1


def test_a_stop_in_a_batch_records_the_replies_in_flight_and_sends_no_more():
    recorded = []
    provider = ScriptedProvider(["a", ProviderError("invalid key", retryable=False, status=401), "c"], delay_s=0.2)
    client, _ = _client(provider, concurrency=3, recorder=lambda q, r: recorded.append(q.key))
    batch = [request(sample=i) for i in range(3)]
    with pytest.raises(ProviderStopped, match="refused the call: HTTP 401: invalid key"):
        client.complete_many(batch)
    assert len(provider.attempts) == 3 and len(recorded) == 2  # in flight together: the other two are kept
    assert recorded == sorted(recorded)  # in request order
    serial = ScriptedProvider(["a", ProviderError("invalid key", retryable=False, status=401), "c"])
    client, _ = _client(serial, concurrency=1, recorder=lambda q, r: recorded.append(q.key))
    with pytest.raises(ProviderStopped):
        client.complete_many(batch)
    assert serial.attempts == [batch[0].key, batch[1].key]  # nothing is sent after the stop


def test_a_wait_closes_the_gate_for_every_call_of_the_provider():
    time = FakeTime()
    gate = Gate(provider="p", budget_s=100.0, backoff_s=0.1, sleep=time.sleep, clock=time.now)
    gate.after_failure(ProviderError("busy", retryable=True, status=429, retry_after=5.0), 0, time.now(), 0.0)
    gate.wait()  # any call, not only the one that failed, waits the server's 5 s
    assert 5.0 <= sum(time.sleeps) <= 5.5
    slept = sum(time.sleeps)
    gate.wait()
    assert sum(time.sleeps) == slept  # open again


def test_a_stop_ends_the_waits_of_the_providers_other_calls():
    gate = Gate(provider="p", budget_s=100.0, backoff_s=0.0)
    gate.after_failure(ProviderError("busy", retryable=True, status=429, retry_after=60.0), 0, gate.now(), 0.0)
    waiting = []

    def wait() -> None:
        try:
            gate.wait()
        except ProviderStopped as exc:
            waiting.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    with pytest.raises(ProviderStopped):
        gate.after_failure(ProviderError("bad key", retryable=False, status=401), 0, gate.now(), 0.0)
    thread.join(timeout=5)
    assert not thread.is_alive() and len(waiting) == 1 and "refused the call: HTTP 401: bad key" in str(waiting[0])


def test_waits_are_told_to_on_wait():
    heard = []
    provider = ScriptedProvider([ProviderError("busy", retryable=True, status=429, retry_after=2.0,
                                               label="429 rate_limit_error"), "fine"])
    client, _ = _client(provider, on_wait=lambda *a: heard.append(a))
    client.complete(request())
    (provider, what, seconds), = heard
    assert (provider, what) == ("scripted", "429 rate_limit_error") and 2.0 <= seconds <= 2.2


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
    client, _ = _client(provider)
    replies = client.complete_many([request(sample=0), request(sample=1, text="fail")])
    assert len(provider.groups) == 2  # the retryable failure of the whole group, then its retry
    assert replies[0].ok and replies[0].attempts == 2
    assert replies[1].error == "failed after 2 attempts: this one failed"
    assert client.complete(request(sample=2)).ok and provider.attempts == [request(sample=2).key]
