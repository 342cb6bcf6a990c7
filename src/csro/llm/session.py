"""The LLM as one piece of work sees it: keyed, seeded requests of one iteration.

Every call of a run carries a deterministic ``CallKey`` (iteration, step, sample) and a
sampling seed derived from the run seed and that key, so a run replays bit for bit whatever
order concurrent calls finish in (a design principle of the project; Hennes et al., arXiv
2603.10098, do not discuss reproducibility). ``LLMSession`` builds such requests for one
iteration of a CSRO run (or one round of an AOR run, or a discovery search) and passes them
to the client; it also says whether the provider honours GBNF grammars.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, Sequence

from csro.seeding import derive_seed

from ._types import CallKey, LLMReply, LLMRequest, Message


class Completer(Protocol):
    """What a session needs of a client (``csro.llm.LLMClient`` implements it).

    Neither call raises on a provider failure: the reply's ``error`` is set and its ``text``
    empty. ``complete_many`` may run its requests concurrently; one reply per request.
    """

    @property
    def grammar(self) -> bool: ...

    def complete(self, request: LLMRequest) -> LLMReply: ...

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMReply]: ...


@dataclasses.dataclass(frozen=True)
class LLMSession:
    """A client bound to an iteration, a sampling temperature and the run seed.

    Attributes:
      client: the run's LLM client.
      iteration: the first field of the call keys this session makes.
      temperature: of every request.
      seed: the run seed; request seeds (and an oracle's own random draws) derive from it.
      scope: put before every step of the keys (a player's seat, ``seat1-``, when several
        oracles answer in one iteration); empty otherwise.
    """

    client: Completer
    iteration: int
    temperature: float
    seed: int
    scope: str = ""

    @property
    def grammar(self) -> bool:
        """Whether the provider honours GBNF grammars (the embedded model)."""
        return self.client.grammar

    def request(self, step: str, messages: Sequence[Message], sample: int = 0, *, prefill: str = "",
                grammar: str | None = None, stop: tuple[str, ...] = (), max_tokens: int = 1024,
                iteration: int | None = None, temperature: float | None = None) -> LLMRequest:
        """A request keyed ``(iteration, step, sample)``, seeded from the run seed and the key,
        at the session's temperature unless ``temperature`` is given."""
        key = CallKey(self.iteration if iteration is None else iteration, self.scope + step, sample)
        return LLMRequest(key=key, messages=tuple(messages), prefill=prefill, grammar=grammar, stop=stop,
                          max_tokens=max_tokens, temperature=self.temperature if temperature is None else temperature,
                          seed=derive_seed(self.seed, str(key)))

    def complete(self, request: LLMRequest) -> LLMReply:
        return self.client.complete(request)

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMReply]:
        return self.client.complete_many(requests)
