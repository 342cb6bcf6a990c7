"""How the LLM client waits out a flaky provider, and when it gives up and stops the run.

Hennes et al. (arXiv 2603.10098) call hosted LLMs and describe none of this; our rules (issue
38: a run's result must not depend on the network's weather):

1. A transient failure (``ProviderError.retryable``: 429, 5xx including Anthropic's 529
   overload, Gemini's ``RESOURCE_EXHAUSTED``/``UNAVAILABLE``, timeouts, dropped connections,
   malformed, truncated or empty bodies) is retried. The wait before the n-th retry of a
   call is ``backoff_s * 2**n`` capped at ``MAX_BACKOFF_S``, jittered uniformly over its
   upper half; when the server says how long to wait (``Retry-After``), its wait instead,
   spread by up to 10% and never below the first backoff (a burst of rate limits is then
   waited out at the server's pace, not at a doubling one).
2. One ``Gate`` per provider (the client's): a wait closes it for every call to the
   provider, so calls that fail together back off together and the calls that did not fail
   wait too, rather than feed the storm.
3. A call may go on failing for ``retry_budget_s`` seconds from its first failure (and make
   at most ``retries`` retries, when that is set). A wait that would end past the budget is
   not started: the call stops the run (``ProviderStopped``), and every other call to the
   provider stops at its next wait.
4. A refusal no retry can fix (an HTTP status that is not transient: 400 the request,
   401/403 the key, 404 the model) stops the run at once.

Only waiting depends on the clock and the jitter; what is sent and recorded does not.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from typing import Callable

from csro.errors import ProviderError, ProviderStopped

MAX_BACKOFF_S = 60.0  # the longest wait our backoff chooses (a server's Retry-After may ask for more)
SLICE_S = 0.25  # a wait is slept in slices this long, so a stop by another call ends it promptly

OnWait = Callable[[str, str, float], None]  # (provider, what failed, seconds to the next attempt)


@dataclasses.dataclass(kw_only=True)
class Gate:
    """The waits of one provider's calls (module docstring).

    Attributes:
      provider: the provider as the messages name it (``openai at https://...``).
      budget_s: ``llm.retry_budget_s``.
      backoff_s: ``llm.backoff_s``, the first retry's wait before jitter.
      retries: ``llm.retries``, the most retries of one call (None: as many as the budget allows).
      on_wait: told of every wait the gate starts (the CLI's live line).
      sleep, clock: injectable for tests.
    """

    provider: str
    budget_s: float
    backoff_s: float
    retries: int | None = None
    on_wait: OnWait | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    # jitter spreads waits in time only: it changes no result
    _random: random.Random = dataclasses.field(default_factory=random.Random, init=False, repr=False)
    _open_at: float = dataclasses.field(default=float("-inf"), init=False)
    _stopped: ProviderStopped | None = dataclasses.field(default=None, init=False)
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, init=False, repr=False)

    def now(self) -> float:
        return self.clock()

    def wait(self) -> float:
        """Block while the gate is closed, and return the seconds waited (0 if it was open);
        raise the run's stop if a call of the provider stopped it."""
        start = None
        while True:
            with self._lock:
                if self._stopped is not None:
                    raise self._stopped
                now = self.clock()
                left = self._open_at - now
            start = now if start is None else start
            if left <= 0:
                return now - start
            self.sleep(min(left, SLICE_S))

    def after_failure(self, error: ProviderError, retries: int, since: float, waited: float) -> None:
        """A call failed with ``error`` after ``retries`` retries, failing since ``since`` (this
        gate's clock) and having waited ``waited`` seconds: close the gate for the wait before
        its next attempt, or stop the run (raises ``ProviderStopped``)."""
        now = self.clock()
        said = f"HTTP {error.status}: {error}" if error.status is not None else str(error)
        if not error.retryable:
            self._stop(f"{self.provider} refused the call: {said}", retries, waited)
        delay = self._delay(retries, error.retry_after)
        if self.retries is not None and retries >= self.retries:
            self._stop(f"{self.provider} still failing after {retries + 1} attempts (llm.retries = {self.retries}): "
                       f"{said}", retries, waited)
        if now - since + delay > self.budget_s:
            self._stop(f"{self.provider} still failing after {retries + 1} attempts over {now - since:.1f} s "
                       f"(the next wait, {delay:.1f} s, would pass llm.retry_budget_s = {self.budget_s:g}): {said}",
                       retries, waited)
        with self._lock:
            self._open_at = max(self._open_at, now + delay)
        if self.on_wait is not None and delay > 0:
            self.on_wait(self.provider, error.label, delay)

    def _delay(self, retries: int, retry_after: float | None) -> float:
        """The wait before retry ``retries + 1`` (module docstring, rule 1)."""
        if retry_after is not None:  # the server knows: its wait, spread a little, never below the first backoff
            return max(retry_after * self._random.uniform(1.0, 1.1), self.backoff_s * self._random.uniform(0.5, 1.0))
        base = min(self.backoff_s * 2 ** retries, MAX_BACKOFF_S)
        return base * self._random.uniform(0.5, 1.0)

    def _stop(self, message: str, retries: int, waited: float) -> None:
        stop = ProviderStopped(" ".join(message.split()), self.provider, retries + 1, waited)
        with self._lock:
            if self._stopped is None:
                self._stopped = stop
        raise stop
