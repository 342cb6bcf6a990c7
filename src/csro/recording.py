"""A run's LLM client over its store: every call recorded when it is made, recorded calls
served from the store (a resumed run asks no call twice), and the replay of an earlier run's
recorded calls (``llm.provider: replay``).

The wiring between two layers that do not know each other: the LLM layer (``csro.llm``)
makes calls and opens no store; the stores (``csro.store``, the AOR and training stores)
keep calls as plain LLM records. Design principle of this project (every LLM call is recorded
under a deterministic key, so a run replays bit for bit); the CSRO paper (Hennes et al., arXiv
2603.10098) does not discuss it.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm import LLMClient, Price, make_provider, meter_for, price_of, replayed_run
from csro.llm.retry import OnWait
from csro.store import DRAW, RunStore, StoreError


@contextlib.contextmanager
def run_client(llm: LLMConfig, store, on_generation: Callable[[str, int, float, bool], None] | None = None,
               on_wait: OnWait | None = None) -> Iterator[LLMClient]:
    """A run's LLM client: every call recorded in ``store`` (a run, AOR or training store),
    recorded calls served from it, priced and capped by ``llm.budget``, a flaky provider
    waited out within ``llm.retry_budget_s``; ``on_generation`` hears of a running completion
    and ``on_wait`` of every wait for the provider (``LLMClient``)."""
    earlier = replayed_run(llm)
    if earlier is not None and earlier.resolve() == store.directory.resolve():
        raise ConfigError("llm.path: a run cannot replay itself (resume it instead)")
    with contextlib.ExitStack() as stack:
        lookup = stack.enter_context(_open(earlier)).llm_call if earlier is not None else None
        provider = make_provider(llm, replay_lookup=lookup)
        override = Price(**llm.prices.model_dump()) if llm.prices is not None else None
        try:
            meter = meter_for(price_of(provider.name, provider.model, override), llm.budget)
        except ConfigError:
            provider.close()
            raise
        client = LLMClient(provider, concurrency=llm.concurrency, timeout_s=llm.timeout_s, retries=llm.retries,
                           retry_budget_s=llm.retry_budget_s, backoff_s=llm.backoff_s, recorder=store.add_llm_call,
                           recorded=store.llm_call, meter=meter, on_generation=on_generation, on_wait=on_wait)
        try:
            # The files provider hands out replies in submission order: give it the calls already made.
            on_submit = getattr(provider, "on_submit", None)
            if on_submit is not None:
                for request, _ in store.llm_calls():
                    on_submit(request.key)
            yield client
        finally:
            client.close()


def replayed_secret(llm: LLMConfig) -> str | None:
    """The secret a new run's store is created with (``RunStore.create``): the replayed run's
    (None where it has none), so that a replay plays the matches it played; else a new one."""
    earlier = replayed_run(llm)
    if earlier is None:
        return DRAW
    with _open(earlier) as store:
        return store.secret()


def _open(directory) -> RunStore:
    """The earlier run's store, whose recorded calls a replay serves."""
    try:
        return RunStore.open(directory)
    except StoreError as exc:
        raise ConfigError(f"llm.path: {exc}") from None
