"""The oracle interface: what the CSRO loop gives a best-response oracle and what it gets back.

In the CSRO loop (Hennes, Li, Schultz, Lanctot, arXiv 2603.10098, Algorithm 1) the oracle is
called once per PSRO iteration with the meta-strategy sigma over the opposing population and
must return a policy, written as code by an LLM, that best responds to sigma. Here it gets an
``OracleContext`` (the game, sigma as a ``Target``, the LLM, the ``Arena`` that plays its
candidates in the sandbox, its configuration and the run's log) and returns an
``OracleResult``: the chosen program (or None), its feedback, the call keys of its lineage
and every attempt.

Our interpretation (the paper is silent): an oracle that produced no valid program returns
``source=None`` and the loop keeps the population as it is.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Protocol, Sequence

from csro.arena import Arena, Feedback, Target
from csro.config import OracleConfig
from csro.games import CodeGame
from csro.llm import LLMSession
from csro.llm.estimate import Scenario, Tally


class OracleLog(Protocol):
    """What an oracle may write to the run store, and read back of its own earlier work.

    ``event`` records an event of the current iteration; a search oracle keeps its programs
    with ``add_program`` and finds them again (a resumed run) with ``programs``; ``support``
    is sigma's support as an earlier iteration's oracle saw it (name -> weight).
    """

    def event(self, kind: str, data: dict) -> None: ...

    def add_program(self, data: dict, fitness: float | None) -> None: ...

    def programs(self, before_iteration: int) -> list[dict]: ...

    def support(self, iteration: int) -> dict[str, float]: ...


@dataclasses.dataclass(frozen=True)
class OracleContext:
    """Everything one best-response call may use.

    Attributes:
      game: the game being played.
      target: sigma over the opposing population (iteration, player, opponents with weights);
        the context builder filters the opponents it shows (``config.context``).
      llm: the LLM, keyed to this iteration and seeded from the run seed.
      arena: where candidates are checked, evaluated, played and traced (``csro.arena``).
      config: the oracle section of the run configuration.
      log: the run store, as far as an oracle may see it.
    """

    game: CodeGame
    target: Target
    llm: LLMSession
    arena: Arena
    config: OracleConfig
    log: OracleLog

    def evaluate(self, source: str) -> Feedback:
        """The candidate's Feedback against sigma (the paper's u)."""
        return self.arena.evaluate(source, self.target)

    def check(self, sources: Sequence[str]) -> list[str | None]:
        """The sandbox check, in the seat the best response plays (every role when symmetric)."""
        return self.arena.check(sources, self.target.seat)


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One candidate program an oracle drew: its call key, step, validity, error or utility.

    ``duplicate_of`` is the key of the attempt that first drew the same program in this call
    (``csro.extract.program_id``); a duplicate is not evaluated again and carries its utility.
    """

    key: str
    step: str
    valid: bool
    error: str | None
    utility: float | None
    duplicate_of: str | None = None


@dataclasses.dataclass
class OracleResult:
    """What a best-response call produced.

    Attributes:
      source: the chosen program, or None when no valid program was produced.
      feedback: its feedback against sigma (None with ``source``).
      call_keys: ``str(CallKey)`` of every call that contributed to the chosen program.
      reason: one line: why this program, or why none.
      attempts: every candidate program.
      author: who wrote ``source`` (``csro.authorship``: model, grammar, example); None with
        ``source``, and from an oracle that does not say (the loop records ``unknown``).
    """

    source: str | None
    feedback: Feedback | None
    call_keys: list[str]
    reason: str
    attempts: list[Attempt]
    author: str | None = None


@dataclasses.dataclass(frozen=True)
class CallSize:
    """One best-response call as the cost model sees it (``Oracle.cost``; ``csro.cost``).

    Attributes:
      first: tokens of the oracle's first prompt, rendered for real on the initial population.
      completion: tokens of one code completion under the scenario.
      program: tokens of a written program (a completion and its prefill).
      rules: tokens of the game's rules (what a description request shows beside the code).
      written: code opponents in the opposing population(s) at this call.
      new: of them, those no earlier call could have described.
    """

    first: float
    completion: float
    program: float
    rules: float
    written: int
    new: int


class Oracle(abc.ABC):
    """A best-response oracle, chosen by name (``csro.registry.ORACLES``).

    Attributes:
      name: its ``oracle.kind``.
      per_player: whether it can answer one seat of per-player populations (n-player,
        general-sum and asymmetric games; ``csro.metagame.ProfileMetaGame``); one that cannot
        answers only a shared population in a symmetric two-player zero-sum game.
    """

    name: str
    per_player: bool = True

    @abc.abstractmethod
    def best_response(self, ctx: OracleContext) -> OracleResult:
        """Write a program that best responds to the opponents of ``ctx``."""

    @abc.abstractmethod
    def cost(self, config: OracleConfig, size: CallSize, scenario: Scenario) -> Tally:
        """The LLM calls and tokens of one ``best_response`` of this configuration under
        ``scenario``; under ``high`` no call can make more calls (``csro.cost`` multiplies
        by the iterations and players)."""
