"""The plain value types of the LLM layer, shared by providers, the client, oracles and the store.

Every call carries a deterministic ``CallKey`` (iteration, oracle step, sample index). The
``files`` and ``replay`` providers and ``csro resume`` match a reply to its call by this key,
never by arrival order, so concurrency cannot change a run (design principle of the project;
the CSRO paper, arXiv 2603.10098, does not discuss reproducibility).
"""

from __future__ import annotations

import dataclasses
from typing import Protocol


@dataclasses.dataclass(frozen=True, order=True)
class CallKey:
    """Where in a run a call is made.

    Attributes:
      iteration: the PSRO iteration (0 for calls made before the first one).
      step: the oracle step, e.g. ``propose``, ``refine-3``, ``repair-0-1``, ``describe``,
        ``diagnose-2``; unique within an iteration together with ``sample``.
      sample: the index of a sample drawn for the same step (0 when only one is drawn).
    """

    iteration: int
    step: str
    sample: int = 0

    def __str__(self) -> str:
        return f"{self.iteration}/{self.step}/{self.sample}"

    @classmethod
    def parse(cls, text: str) -> "CallKey":
        """Inverse of ``str``: ``"3/refine-2/0"`` -> ``CallKey(3, "refine-2", 0)``."""
        iteration, step, sample = text.split("/")
        return cls(int(iteration), step, int(sample))


@dataclasses.dataclass(frozen=True)
class Message:
    """One chat message; ``role`` is ``system``, ``user`` or ``assistant``.

    ``images`` are PNG images attached to a user message (e.g. robot key frames): the
    ``openai``, ``anthropic`` and ``gemini`` providers send them as image parts; the other
    providers, and the run store's record of the call, keep the text only.
    """

    role: str
    content: str
    images: tuple[bytes, ...] = ()


@dataclasses.dataclass(frozen=True)
class LLMRequest:
    """One completion request.

    Attributes:
      key: the deterministic call key.
      messages: the chat so far.
      prefill: text the assistant's reply is started with (e.g. an opening code fence and
        the policy class header); the model writes the continuation. Providers that cannot
        prefill natively append it as a trailing assistant message or an instruction.
      grammar: an optional GBNF grammar that constrains the completion (embedded provider;
        others ignore it).
      stop: stop strings.
      max_tokens: the completion budget.
      temperature: sampling temperature.
      seed: sampling seed (the embedded provider is deterministic given it).
    """

    key: CallKey
    messages: tuple[Message, ...]
    prefill: str = ""
    grammar: str | None = None
    stop: tuple[str, ...] = ()
    max_tokens: int = 1024
    temperature: float = 0.8
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class LLMReply:
    """The outcome of one call, as recorded in the run store.

    ``text`` is the completion *without* the prefill (``full_text`` joins them). When every
    attempt failed, ``error`` says why and ``text`` is empty; nothing is raised to the oracle.
    ``tokens_in`` counts every prompt token; ``tokens_cached`` of them were read from the
    provider's prompt cache and ``tokens_cache_write`` written to it. ``cost_usd`` is set by
    the client from ``csro.llm.prices`` (None: the model's price is unknown). ``attempts``
    counts the provider calls this reply took and ``waited_s`` the seconds spent waiting
    between them (``csro.llm.retry``; both included in ``latency_s``).
    """

    key: CallKey
    text: str
    provider: str
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    error: str | None = None
    prefill: str = ""
    tokens_cached: int = 0
    tokens_cache_write: int = 0
    cost_usd: float | None = None
    waited_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def full_text(self) -> str:
        return self.prefill + self.text



class Provider(Protocol):
    """One LLM backend. ``complete`` makes exactly one attempt (the client retries).

    ``max_concurrency`` caps parallel calls regardless of the configured concurrency
    (1 for the embedded model, which serves one request at a time); None for no cap.
    ``grammar`` says whether ``LLMRequest.grammar`` is honoured (others ignore it). What a
    provider can do is read from its class, registered in ``csro.registry.PROVIDERS``: ``free``
    (priced at 0), ``counts_tokens`` (a ``count_tokens(messages, prefill)`` with the model's
    own tokenizer, for ``--estimate``), ``takes_images(llm)`` and ``from_config(llm, lookup)``.
    A provider that decodes requests together has ``complete_group(requests, timeout_s)``: one
    ``LLMReply`` or ``ProviderError`` per request, each depending on the whole list (the
    embedded model; ``LLMClient.complete_many`` then sends it whole lists).
    """

    name: str
    model: str
    max_concurrency: int | None
    grammar: bool
    free: bool
    counts_tokens: bool

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        """One attempt; raises ``ProviderError`` on failure."""
        ...

    def close(self) -> None:
        """Release the model, connections or servers."""
        ...
