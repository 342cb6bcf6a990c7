"""The oracle interface: what the CSRO loop gives a best-response oracle and what it gets back.

In the CSRO loop (Hennes, Li, Schultz, Lanctot, arXiv 2603.10098, Algorithm 1) the oracle is
called once per PSRO iteration with the meta-strategy sigma over the opposing population and
must return a policy, written as code by an LLM, that best responds to sigma. Here it gets an
``OracleContext`` (the game, sigma's opponents with their weights, an LLM client, an evaluator
that plays a candidate against sigma in the sandbox) and returns an ``OracleResult``: the
chosen program (or None), its feedback, the call keys of its lineage and every attempt.

Our interpretation (the paper is silent): an oracle that produced no valid program returns
``source=None`` and the loop keeps the population as it is.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Callable, Protocol, Sequence

from csro.config import OracleConfig
from csro.evaluation.policy_ref import PolicySpec
from csro.games import CodeGame
from csro.llm._types import LLMReply, LLMRequest


@dataclasses.dataclass(frozen=True)
class Opponent:
    """One policy of the opposing population with its sigma weight.

    Attributes:
      name: its policy id in the population (``p0``, ...).
      weight: its weight in sigma.
      spec: the playable policy (a built-in or code).
      description: for built-ins a one-line description; ``""`` for code policies.
    """

    name: str
    weight: float
    spec: PolicySpec
    description: str = ""


@dataclasses.dataclass(frozen=True)
class Feedback:
    """How a candidate did against sigma (the paper's u, plus the detail we show the LLM).

    Attributes:
      utility: the sigma-weighted mean match return of the candidate (the paper's u).
      per_opponent: mean return against each opponent with weight > 0.
      forfeits: reason -> matches the candidate forfeited.
      forfeit_details: a few ``{"opponents", "reason", "detail"}``.
      matches: matches played.
    """

    utility: float
    per_opponent: dict[str, float]
    forfeits: dict[str, int]
    forfeit_details: tuple[dict, ...]
    matches: int


Evaluator = Callable[[str], Feedback]
"""Candidate source -> its Feedback against sigma (the loop plays it in the sandbox, seeded)."""

Player = Callable[[Sequence[str], Sequence[str], int], list[dict[str, float]]]
"""(candidate sources, opponent names, matches) -> per candidate, its mean return against
each named opponent (the loop plays the missing matches in the sandbox; stored ones are reused)."""


class ProgramStore(Protocol):
    """Where a search oracle keeps its programs across iterations (``csro.store.RunStore``)."""

    def add_program(self, data: dict, fitness: float | None) -> None: ...

    def programs(self, before_iteration: int | None = None) -> list[dict]: ...

    def sigmas(self) -> list: ...


class LLMClient(Protocol):
    """The two calls an oracle makes (``csro.llm.LLMClient`` implements them).

    Neither raises on a provider failure: the reply's ``error`` is set and its ``text`` empty.
    ``complete_many`` may run its requests concurrently; it returns one reply per request.
    """

    def complete(self, request: LLMRequest) -> LLMReply: ...

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMReply]: ...


@dataclasses.dataclass
class OracleContext:
    """Everything one best-response call may use.

    Attributes:
      game: the game being played.
      iteration: the PSRO iteration (the first field of every call key).
      player: the player the best response is for (0 in symmetric games).
      opponents: the whole opposing population with sigma weights; the context builder
        filters it (``config.context``).
      llm: the LLM client.
      evaluate: plays a candidate source against sigma and returns its Feedback.
      config: the oracle section of the run configuration.
      temperature: sampling temperature of every call.
      seed: the run seed (request seeds are derived from it and the call key).
      log: records an event ``(kind, data)`` in the run store.
      play: plays candidates against named opponents (the evolve oracle's cascade).
      programs: the run store's program table (the evolve oracle's archive).
      grammar: the provider honours GBNF grammars (the embedded model).
      matches: matches per payoff cell (the run's ``matches_per_cell``).
    """

    game: CodeGame
    iteration: int
    player: int
    opponents: list[Opponent]
    llm: LLMClient
    evaluate: Evaluator
    config: OracleConfig
    temperature: float
    seed: int
    log: Callable[[str, dict], None]
    play: Player | None = None
    programs: ProgramStore | None = None
    grammar: bool = False
    matches: int = 4


@dataclasses.dataclass
class OracleResult:
    """What a best-response call produced.

    Attributes:
      source: the chosen program, or None when no valid program was produced.
      feedback: its feedback against sigma (None with ``source``).
      call_keys: ``str(CallKey)`` of every call that contributed to the chosen program.
      reason: one line: why this program, or why none.
      attempts: every candidate program, ``{"key", "step", "valid", "error", "utility"}``.
    """

    source: str | None
    feedback: Feedback | None
    call_keys: list[str]
    reason: str
    attempts: list[dict]


class Oracle(abc.ABC):
    """A best-response oracle, chosen by name (``ORACLES``)."""

    name: str

    @abc.abstractmethod
    def best_response(self, ctx: OracleContext) -> OracleResult:
        """Write a program that best responds to the opponents of ``ctx``."""
