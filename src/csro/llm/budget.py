"""The meter of a run's LLM calls: each call priced, spending counted, ``llm.budget`` enforced.

Hennes et al. (arXiv 2603.10098) report no budget. Our rules:

- Every call the client answers is counted, fresh or served from the recording, in request
  order: a resumed run re-walks its calls, so its counts at every call equal those of a run
  that never stopped (and the same calls are refused).
- A fresh call is made only if its *worst case* fits in what is left of every cap, the
  run's and its role's (``csro.llm.roles``): one call, its prompt's approximate tokens
  (``csro.llm.tokens``) times ``PROMPT_MARGIN`` (a provider's tokenizer may count more)
  plus its whole ``max_tokens`` completion, priced as such. A batch
  (``complete_many``) is admitted whole or not at all. So a cap is never passed, and a run
  may stop up to one call's worst case below it.
- A refused batch raises ``BudgetExhausted`` before anything is sent; the loop stops at the
  iteration boundary (``csro.psro``) and ``csro resume DIR --set llm.budget...`` continues.
- Tokens are prompt plus completion tokens (cached prompt tokens included); dollars are
  ``csro.llm.prices``; a call of unknown price adds nothing to the dollars spent, so a dollar
  cap needs a known price (``Meter`` refuses one without).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from typing import Sequence

from csro.errors import BudgetExhausted, ConfigError, RunStopped
from csro.events import BUDGET_EXHAUSTED, DISCOVER_START, ITERATION_START, PROVIDER_STOPPED, STOPS
from csro.llm._types import LLMReply, LLMRequest
from csro.llm.prices import Price
from csro.llm.roles import role_of
from csro.llm.tokens import approx_prompt_tokens

WENT_ON = (ITERATION_START, DISCOVER_START)  # events of a run that started or resumed work
PROMPT_MARGIN = 1.25  # the approximation is within ~15% of a BPE tokenizer on csro's prompts


@dataclasses.dataclass(frozen=True)
class Limits:
    """Caps (None: none): US dollars, prompt+completion tokens, calls."""

    usd: float | None = None
    tokens: int | None = None
    calls: int | None = None


@dataclasses.dataclass
class Spent:
    """What has been counted against one set of caps."""

    usd: float = 0.0
    tokens: int = 0
    calls: int = 0

    def add(self, usd: float, tokens: int, calls: int) -> None:
        self.usd += usd
        self.tokens += tokens
        self.calls += calls


class Meter:
    """Prices replies and enforces ``limits`` (for the run) and ``roles`` (per call role)."""

    def __init__(self, price: Price | None, limits: Limits = Limits(), roles: dict[str, Limits] | None = None):
        self.price = price
        self.limits = limits
        self.roles = dict(roles or {})
        if price is None and any(cap.usd is not None for cap in (limits, *self.roles.values())):
            raise ConfigError("llm.budget.usd: the model's price is unknown; give it in llm.prices")
        self.spent = Spent()
        self.by_role: dict[str, Spent] = {}
        self._lock = threading.Lock()

    def priced(self, reply: LLMReply) -> LLMReply:
        """``reply`` with its ``cost_usd`` (None when the price is unknown)."""
        cost = None if self.price is None else self.price.cost(reply.tokens_in, reply.tokens_out, reply.tokens_cached,
                                                              reply.tokens_cache_write)
        return dataclasses.replace(reply, cost_usd=cost)

    def count(self, reply: LLMReply) -> None:
        """Count an answered call (fresh or replayed) against the caps."""
        usd, tokens = reply.cost_usd or 0.0, reply.tokens_in + reply.tokens_out
        with self._lock:
            self.spent.add(usd, tokens, 1)
            self.by_role.setdefault(role_of(reply.key.step), Spent()).add(usd, tokens, 1)

    def admit(self, requests: Sequence[LLMRequest]) -> None:
        """Raise ``BudgetExhausted`` unless all ``requests`` (fresh calls) fit at their worst case."""
        if not requests:
            return
        worst: dict[str, Spent] = {}
        for r in requests:
            tokens_in = math.ceil(PROMPT_MARGIN * approx_prompt_tokens(r))
            usd = 0.0 if self.price is None else self.price.cost(tokens_in, r.max_tokens)
            worst.setdefault(role_of(r.key.step), Spent()).add(usd, tokens_in + r.max_tokens, 1)
        total = Spent()
        for w in worst.values():
            total.add(w.usd, w.tokens, w.calls)
        with self._lock:
            _check("llm.budget", self.limits, self.spent, total)
            for role, w in worst.items():
                if role in self.roles:
                    _check(f"llm.budget.roles.{role}", self.roles[role], self.by_role.get(role, Spent()), w)

    def snapshot(self) -> dict:
        """The spending so far: ``{"usd", "tokens", "calls", "roles": {role: {...}}}``."""
        with self._lock:
            return {**dataclasses.asdict(self.spent),
                    "roles": {k: dataclasses.asdict(v) for k, v in sorted(self.by_role.items())}}


def meter_for(price: Price | None, budget) -> Meter:
    """The meter of a ``csro.config.BudgetConfig`` (``llm.budget``)."""
    def limits(b) -> Limits:
        return Limits(b.usd, b.tokens, b.calls)

    return Meter(price, limits(budget), {role: limits(b) for role, b in budget.roles.items()})


def _check(field: str, limits: Limits, spent: Spent, worst: Spent) -> None:
    for what, cap, used, more, unit in (("calls", limits.calls, spent.calls, worst.calls, "calls"),
                                        ("tokens", limits.tokens, spent.tokens, worst.tokens, "tokens"),
                                        ("usd", limits.usd, spent.usd, worst.usd, "USD")):
        if cap is not None and used + more > cap:
            raise BudgetExhausted(f"{field}.{what} = {cap:g} reached: {used:g} {unit} spent, the next "
                                  f"{worst.calls} call(s) could take {more:.4g} more", f"{field}.{what}")


def stop_event(stop: RunStopped) -> str:
    """The kind of event that records ``stop`` (``budget_exhausted`` or ``provider_stopped``,
    with ``stop.data()``; ``last_stop`` reads it back)."""
    return BUDGET_EXHAUSTED if isinstance(stop, BudgetExhausted) else PROVIDER_STOPPED


def last_stop(recorded: Sequence[dict]) -> dict | None:
    """Why the run stopped, ``{"by": "budget" | "provider", "reason": ...}``, if its last stop
    (a ``budget_exhausted`` or ``provider_stopped`` event) came after its last
    ``iteration_start`` (or ``discover_start``): a resumed run that went on is no longer stopped."""
    last = next((e for e in reversed(recorded) if e["kind"] in (*STOPS, *WENT_ON)), None)
    if last is None or last["kind"] in WENT_ON:
        return None
    return {"by": "budget" if last["kind"] == BUDGET_EXHAUSTED else "provider", "reason": last["data"]["reason"]}
