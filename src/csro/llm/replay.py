"""The ``replay`` provider: the recorded replies of an earlier run, so that a run reproduces
without a model (not in Hennes et al., arXiv 2603.10098; our addition).

A reply is looked up by its call key (``replay_lookup``, normally the earlier run store's
``llm_call``), never by arrival order. A recorded failure is returned as the same failed
reply, not raised, so the replayed oracle sees exactly what the original one saw. A call the
earlier run never made is a non-retryable ``ProviderError``: the runs have diverged.
"""

from __future__ import annotations

from typing import Callable

from csro.llm._types import CallKey, LLMReply, LLMRequest
from csro.config import LLMConfig
from csro.errors import ConfigError, ProviderError

Lookup = Callable[[CallKey], LLMReply | None]


class ReplayProvider:
    """Replies recorded by an earlier run."""

    name = "replay"
    free = True
    counts_tokens = False
    max_concurrency: int | None = None
    grammar = False

    def __init__(self, lookup: Lookup, *, model: str = "replay"):
        self.model = model
        self._lookup = lookup

    @classmethod
    def from_config(cls, llm: LLMConfig, lookup: Lookup | None = None) -> "ReplayProvider":
        if lookup is None:
            raise ConfigError("llm.path: the replay provider needs the recorded calls of an earlier run "
                              "(csro.recording.open_provider opens its store)")
        return cls(lookup, model=llm.path or "replay")

    @classmethod
    def takes_images(cls, llm: LLMConfig) -> bool:
        return False

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        reply = self._lookup(request.key)
        if reply is None:
            raise ProviderError(f"no recorded reply for call {request.key}", retryable=False)
        return reply

    def close(self) -> None:
        """Nothing to close: whoever opened the earlier run's store closes it (``csro.recording``)."""
