"""The LLM client: concurrency limit, retries with exponential backoff, recording and replay.

Hennes et al. (arXiv 2603.10098) call a hosted LLM as the best-response oracle and do not
describe the plumbing. Our interpretation, so that a run is reproducible and survives a
flaky server:

1. every request's key is announced to the provider first, in request order
   (``provider.on_submit``, where the provider has it: the ``files`` provider numbers its
   replies this way, also for calls served from the recording, so a resumed run numbers
   them identically);
2. a request already recorded (``recorded(key)``) is answered from the recording;
3. otherwise up to ``1 + retries`` attempts; a retryable ``ProviderError`` (429, 5xx,
   timeouts, connection errors, malformed replies) waits ``backoff_s * 2**attempt``;
   anything else stops at once;
4. the final reply, error or not, is priced (``csro.llm.prices``) and goes to
   ``recorder(request, reply)``; nothing is raised for a provider failure;
5. every answered call, fresh or recorded, is counted by the ``Meter``
   (``csro.llm.budget``), which refuses a batch of fresh calls that could pass
   ``llm.budget`` by raising ``BudgetExhausted`` before anything is sent.

``on_generation(key, tokens, seconds, done)`` goes to a provider that reports a completion
while it runs (one with an ``on_generation`` attribute, the embedded model), for a live line.

``complete_many`` runs its requests on a thread pool of ``min(concurrency,
provider.max_concurrency)`` workers and records the replies in request order, so the
store's order never depends on which call finished first.

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

from csro.errors import ProviderError
from csro.llm._types import CallKey, LLMReply, LLMRequest, Provider
from csro.llm.budget import Meter
from csro.llm.prices import price_of

Recorder = Callable[[LLMRequest, LLMReply], None]
Recorded = Callable[[CallKey], LLMReply | None]


class LLMClient:
    """Calls one provider for the oracles; see the module docstring for the rules."""

    def __init__(self, provider: Provider, *, concurrency: int = 2, timeout_s: float = 300.0, retries: int = 3,
                 backoff_s: float = 1.0, recorder: Recorder | None = None, recorded: Recorded | None = None,
                 meter: Meter | None = None, sleep: Callable[[float], None] = time.sleep,
                 on_generation: Callable[[str, int, float, bool], None] | None = None):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if retries < 0:
            raise ValueError(f"retries must be at least 0, got {retries}")
        self.provider = provider
        if on_generation is not None and hasattr(provider, "on_generation"):
            provider.on_generation = on_generation
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self._recorder = recorder
        self._recorded = recorded
        self._sleep = sleep
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
        """The reply to one request (never raises on a provider failure: ``error`` is set)."""
        return self.complete_many([request])[0]

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMReply]:
        """The replies to ``requests``, in the same order, computed concurrently."""
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
            replies = [reply if reply is not None else self._record(request, next(fresh))
                       for request, reply in zip(requests, known)]
        for reply in replies:
            self.meter.count(reply)
        return replies

    def stats(self) -> dict:
        """This client's provider calls: ``calls, tokens_in, tokens_out, errors, latency_s``,
        and ``replayed``, the calls answered from the recording (not counted in ``calls``)."""
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

    def _call(self, request: LLMRequest) -> LLMReply:
        """The provider's priced reply (after retries), counted in the stats."""
        return self._counted(self._attempt(request))

    def _call_group(self, requests: list[LLMRequest], known: list[LLMReply | None]) -> list[LLMReply]:
        """The replies to the requests not ``known``, decoded by ``provider.complete_group``
        beside all of ``requests`` (module docstring), each priced and counted."""
        start = time.monotonic()
        for attempt in range(self.retries + 1):
            try:
                results = self.provider.complete_group(requests, self.timeout_s)
                break
            except ProviderError as exc:
                error = exc
            except Exception as exc:  # a provider bug must not end the run: recorded, not retried
                error = ProviderError(f"{type(exc).__name__}: {exc}", retryable=False)
            if not error.retryable or attempt == self.retries:
                results = [error] * len(requests)
                break
            self._sleep(self.backoff_s * 2 ** attempt)
        latency = time.monotonic() - start
        return [self._counted(self._failed(request, result, attempt + 1, latency)
                              if isinstance(result, ProviderError) else
                              dataclasses.replace(result, attempts=attempt + 1, latency_s=latency))
                for request, result, reply in zip(requests, results, known) if reply is None]

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

    def _attempt(self, request: LLMRequest) -> LLMReply:
        start = time.monotonic()
        attempt = 0
        while True:
            try:
                reply = self.provider.complete(request, self.timeout_s)
                return dataclasses.replace(reply, attempts=attempt + 1, latency_s=time.monotonic() - start)
            except ProviderError as exc:
                error, retryable = exc, exc.retryable
            except Exception as exc:  # a provider bug must not end the run: recorded, not retried
                error, retryable = ProviderError(f"{type(exc).__name__}: {exc}", retryable=False), False
            if not retryable or attempt == self.retries:
                return self._failed(request, error, attempt + 1, time.monotonic() - start)
            self._sleep(self.backoff_s * 2 ** attempt)
            attempt += 1

    def _failed(self, request: LLMRequest, error: ProviderError, attempts: int, latency_s: float) -> LLMReply:
        """The recorded reply of a request that failed."""
        return LLMReply(request.key, "", self.provider.name, self.provider.model, attempts=attempts,
                        latency_s=latency_s, error=_one_line(error, attempts))

    def _record(self, request: LLMRequest, reply: LLMReply) -> LLMReply:
        if self._recorder is not None:
            self._recorder(request, reply)
        return reply


def _one_line(error: ProviderError, attempts: int) -> str:
    what = f"HTTP {error.status}" if error.status is not None else "failed"
    plural = "attempt" if attempts == 1 else "attempts"
    return " ".join(f"{what} after {attempts} {plural}: {error}".split())
