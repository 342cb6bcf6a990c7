"""The LLM client: concurrency limit, retries within a time budget, recording and replay.

Hennes et al. (arXiv 2603.10098) call a hosted LLM as the best-response oracle and do not
describe the plumbing. Our interpretation, so that a run is reproducible and its result does
not depend on a flaky server:

1. every request's key is announced to the provider first, in request order
   (``provider.on_submit``, where the provider has it: the ``files`` provider numbers its
   replies this way, also for calls served from the recording, so a resumed run numbers
   them identically);
2. a request already recorded (``recorded(key)``) is answered from the recording;
3. otherwise the provider is called until it answers: transient failures (429, 5xx,
   overload, timeouts, connection errors, malformed replies) are waited out behind the
   provider's one ``Gate`` (``csro.llm.retry``: backoff with jitter, ``Retry-After``,
   ``llm.retry_budget_s``); one that outlasts the budget, or a hosted API's refusal no retry
   fixes (400, 401/403, 404), raises ``ProviderStopped``: the call is not recorded, so a
   resumed run makes it again under the same key and seed;
4. any other failure (the embedded model's time limit, a replay that diverged, a provider
   bug) is the call's outcome: a reply with ``error`` set and empty text;
5. every reply is priced (``csro.llm.prices``) and goes to ``recorder(request, reply)``
   with its ``attempts`` and ``waited_s`` (seconds spent waiting between attempts);
6. every answered call, fresh or recorded, is counted by the ``Meter``
   (``csro.llm.budget``), which refuses a batch of fresh calls that could pass
   ``llm.budget`` by raising ``BudgetExhausted`` before anything is sent.

``on_generation(key, tokens, seconds, done)`` goes to a provider that reports a completion
while it runs (one with an ``on_generation`` attribute, the embedded model), for a live line;
``on_wait(provider, what, seconds)`` hears of every wait the gate starts.

``complete_many`` runs its requests on a thread pool of ``min(concurrency,
provider.max_concurrency)`` workers and records the replies in request order, so the
store's order never depends on which call finished first. When a call of the batch stops
the run, the others' replies are still recorded (in request order) before it is raised.

A provider that decodes requests together (``complete_group``, the embedded model: a reply
then depends on the requests decoded beside it) gets the whole list of a ``complete_many``
whenever any of its requests is not recorded, the recorded ones included, so a resumed run
decodes the same groups as an uninterrupted one; the recorded replies are kept and the
recomputed copies of them dropped (rule 2 still holds for what is recorded). Retries
(rule 3) then apply to the whole list.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import threading
import time
from typing import Callable, Sequence

from csro.errors import ProviderError, ProviderStopped
from csro.llm._types import CallKey, LLMReply, LLMRequest, Provider
from csro.llm.budget import Meter
from csro.llm.prices import price_of
from csro.llm.retry import Gate, OnWait

Recorder = Callable[[LLMRequest, LLMReply], None]
Recorded = Callable[[CallKey], LLMReply | None]


class LLMClient:
    """Calls one provider for the oracles; see the module docstring for the rules."""

    def __init__(self, provider: Provider, *, concurrency: int = 2, timeout_s: float = 300.0,
                 retries: int | None = None, retry_budget_s: float = 300.0, backoff_s: float = 1.0,
                 recorder: Recorder | None = None, recorded: Recorded | None = None, meter: Meter | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 on_generation: Callable[[str, int, float, bool], None] | None = None, on_wait: OnWait | None = None):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if retries is not None and retries < 0:
            raise ValueError(f"retries must be at least 0, got {retries}")
        self.provider = provider
        if on_generation is not None and hasattr(provider, "on_generation"):
            provider.on_generation = on_generation
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        where = getattr(provider, "base_url", None)
        self.gate = Gate(provider=f"{provider.name} at {where}" if where else provider.name, budget_s=retry_budget_s,
                         backoff_s=backoff_s, retries=retries, on_wait=on_wait, sleep=sleep, clock=clock)
        self._recorder = recorder
        self._recorded = recorded
        # Without a budget the meter only prices: the provider's own price, from the table.
        self.meter = meter or Meter(price_of(provider.name, provider.model))
        self._lock = threading.Lock()
        self._stats = {"calls": 0, "tokens_in": 0, "tokens_out": 0, "errors": 0, "latency_s": 0.0, "replayed": 0}

    @property
    def grammar(self) -> bool:
        """Whether the provider honours GBNF grammars (``Provider.grammar``)."""
        return self.provider.grammar

    @property
    def workers(self) -> int:
        """The thread-pool size of ``complete_many``: the concurrency, capped by the provider."""
        cap = getattr(self.provider, "max_concurrency", None)
        return self.concurrency if cap is None else max(1, min(self.concurrency, cap))

    def complete(self, request: LLMRequest) -> LLMReply:
        """The reply to one request (``error`` set on a failure that is the call's outcome;
        ``ProviderStopped`` when the provider cannot answer it, module docstring)."""
        return self.complete_many([request])[0]

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMReply]:
        """The replies to ``requests``, in the same order, computed concurrently; raises
        ``ProviderStopped`` after recording the others when a call cannot be answered."""
        requests = list(requests)
        keys = [r.key for r in requests]
        if len(set(keys)) != len(keys):
            raise ValueError(f"complete_many got the same call key twice: {keys}")
        known = [self._lookup(r) for r in requests]  # in this thread, in request order
        todo = [r for r, reply in zip(requests, known) if reply is None]
        self.meter.admit(todo)  # before the provider hears of any of them
        self._submit(requests)
        workers = min(self.workers, len(todo))
        with contextlib.ExitStack() as stack:
            if todo and len(requests) > 1 and hasattr(self.provider, "complete_group"):
                fresh = iter(self._call_group(requests, known))
            elif workers > 1:
                pool = stack.enter_context(concurrent.futures.ThreadPoolExecutor(workers, "csro-llm"))
                fresh = pool.map(self._call, todo)
            else:
                fresh = map(self._call, todo)
            # Both maps yield in request order: each reply is recorded as soon as all before it are.
            outcomes = [reply if reply is not None else self._record(request, next(fresh))
                        for request, reply in zip(requests, known)]
        replies = [o for o in outcomes if isinstance(o, LLMReply)]
        for reply in replies:
            self.meter.count(reply)
        stop = next((o for o in outcomes if isinstance(o, ProviderStopped)), None)
        if stop is not None:
            raise stop
        return replies

    def stats(self) -> dict:
        """This client's provider calls: ``calls, tokens_in, tokens_out, errors, latency_s``,
        and ``replayed``, the calls answered from the recording (not counted in ``calls``);
        a call that stopped the run is not counted."""
        with self._lock:
            return dict(self._stats)

    def close(self) -> None:
        """Close the provider."""
        self.provider.close()

    def _submit(self, requests: list[LLMRequest]) -> None:
        on_submit = getattr(self.provider, "on_submit", None)
        if on_submit is not None:
            for request in requests:
                on_submit(request.key)

    def _lookup(self, request: LLMRequest) -> LLMReply | None:
        """The recorded reply of ``request``, if there is one."""
        reply = self._recorded(request.key) if self._recorded is not None else None
        if reply is not None:
            with self._lock:
                self._stats["replayed"] += 1
        return reply

    def _call(self, request: LLMRequest) -> LLMReply | ProviderStopped:
        """The provider's priced reply (after retries), counted in the stats; or the stop."""
        outcome = self._retrying(lambda: self.provider.complete(request, self.timeout_s))
        if isinstance(outcome, ProviderStopped):
            return outcome
        return self._finished(request, *outcome)

    def _call_group(self, requests: list[LLMRequest],
                    known: list[LLMReply | None]) -> list[LLMReply | ProviderStopped]:
        """The replies to the requests not ``known``, decoded by ``provider.complete_group``
        beside all of ``requests`` (module docstring), each priced and counted; or the stop."""
        outcome = self._retrying(lambda: self.provider.complete_group(requests, self.timeout_s))
        todo = [request for request, reply in zip(requests, known) if reply is None]
        if isinstance(outcome, ProviderStopped):
            return [outcome] * len(todo)
        results, attempts, latency, waited = outcome
        if isinstance(results, ProviderError):
            results = [results] * len(requests)
        return [self._finished(request, result, attempts, latency, waited)
                for request, result, reply in zip(requests, results, known) if reply is None]

    def _finished(self, request: LLMRequest, result: LLMReply | ProviderError, attempts: int, latency: float,
                  waited: float) -> LLMReply:
        """The call's reply (or its failure as a reply), with its attempts and times, priced and counted."""
        return self._counted(self._failed(request, result, attempts, latency, waited)
                             if isinstance(result, ProviderError) else
                             dataclasses.replace(result, attempts=attempts, latency_s=latency, waited_s=waited))

    def _retrying(self, attempt: Callable[[], object]) -> tuple[object, int, float, float] | ProviderStopped:
        """``(result, attempts, seconds, seconds waited)`` of calling ``attempt`` until it
        returns or fails for good (the result is then its ``ProviderError``), behind the gate;
        or the ``ProviderStopped`` of a failure that stops the run (module docstring)."""
        start = self.gate.now()
        since, waited = None, 0.0
        retries = 0
        while True:
            try:
                waited += self.gate.wait()
                return attempt(), retries + 1, self.gate.now() - start, waited
            except ProviderStopped as stop:  # another call of the provider stopped the run
                return stop
            except ProviderError as exc:
                error = exc
            except Exception as exc:  # a provider bug must not end the run: recorded, not retried
                error = ProviderError(f"{type(exc).__name__}: {exc}", retryable=False)
            if not error.retryable and error.status is None:  # the call's own outcome
                return error, retries + 1, self.gate.now() - start, waited
            since = self.gate.now() if since is None else since
            try:
                self.gate.after_failure(error, retries, since, waited)
            except ProviderStopped as stop:
                return stop
            retries += 1

    def _counted(self, reply: LLMReply) -> LLMReply:
        """``reply`` priced and counted in the stats."""
        reply = self.meter.priced(reply)
        with self._lock:
            self._stats["calls"] += 1
            self._stats["tokens_in"] += reply.tokens_in
            self._stats["tokens_out"] += reply.tokens_out
            self._stats["errors"] += not reply.ok
            self._stats["latency_s"] += reply.latency_s
        return reply

    def _failed(self, request: LLMRequest, error: ProviderError, attempts: int, latency_s: float,
                waited_s: float) -> LLMReply:
        """The recorded reply of a request that failed."""
        return LLMReply(request.key, "", self.provider.name, self.provider.model, attempts=attempts,
                        latency_s=latency_s, error=_one_line(error, attempts), waited_s=waited_s)

    def _record(self, request: LLMRequest, outcome: LLMReply | ProviderStopped) -> LLMReply | ProviderStopped:
        if self._recorder is not None and isinstance(outcome, LLMReply):
            self._recorder(request, outcome)
        return outcome


def _one_line(error: ProviderError, attempts: int) -> str:
    what = f"HTTP {error.status}" if error.status is not None else "failed"
    plural = "attempt" if attempts == 1 else "attempts"
    return " ".join(f"{what} after {attempts} {plural}: {error}".split())
