"""Scripted providers for the client tests (our own logic only; real providers have real tests)."""

from __future__ import annotations

import threading
import time

from csro.llm import CallKey, LLMReply, LLMRequest, Message, ProviderError


def request(iteration: int = 0, step: str = "propose", sample: int = 0, text: str = "write a policy") -> LLMRequest:
    return LLMRequest(CallKey(iteration, step, sample), (Message("user", text),))


class ScriptedProvider:
    """Answers each attempt with the next item of ``script`` (an exception is raised, a string
    is a reply); after the script, replies ``"ok"``. Tracks calls and peak concurrency."""

    name = "scripted"
    model = "fake"
    grammar = False

    def __init__(self, script=(), *, delay_s: float = 0.0, max_concurrency: int | None = None):
        self.script = list(script)
        self.delay_s = delay_s
        self.max_concurrency = max_concurrency
        self.attempts: list[CallKey] = []
        self.submitted: list[CallKey] = []
        self.closed = False
        self.in_flight = self.peak = 0
        self._lock = threading.Lock()

    def on_submit(self, key: CallKey) -> None:
        self.submitted.append(key)

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        with self._lock:
            self.attempts.append(request.key)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            item = self.script.pop(0) if self.script else "ok"
        try:
            time.sleep(self.delay_s)
            if isinstance(item, BaseException):
                raise item
            return LLMReply(request.key, f"{item} {request.key}", self.name, self.model, tokens_in=10, tokens_out=5)
        finally:
            with self._lock:
                self.in_flight -= 1

    def close(self) -> None:
        self.closed = True


class GroupingProvider(ScriptedProvider):
    """A provider that decodes a ``complete_many``'s requests together: each reply names the
    whole group it was decoded in; a request whose text says ``fail`` fails alone."""

    def __init__(self, script=()):
        super().__init__(script)
        self.groups: list[list[CallKey]] = []

    def complete_group(self, requests, timeout_s):
        keys = [r.key for r in requests]
        with self._lock:
            self.groups.append(keys)
            item = self.script.pop(0) if self.script else "ok"
        if isinstance(item, BaseException):
            raise item
        return [ProviderError("this one failed", retryable=False) if "fail" in r.messages[0].content else
                LLMReply(r.key, f"{item} {r.key} of {len(keys)}", self.name, self.model, tokens_in=10, tokens_out=5)
                for r in requests]


class FakeTime:
    """A clock that only moves when slept on (``sleep`` and ``now`` for ``LLMClient``/``Gate``)."""

    def __init__(self):
        self.t = 1000.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.t += seconds
