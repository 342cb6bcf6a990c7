"""What every game looks like to code policies and to the match runner.

A ``CodeGame`` wraps an OpenSpiel game (never re-implementing its rules) and turns its
states into the plain-data method calls a code policy answers. A match is driven as a
sequence of *rounds*: ``Match.pending()`` lists the calls to make now (one per seat that
must act or be notified), the runner answers them all, and ``Match.answer`` applies the
replies to the OpenSpiel state. Simultaneous games (RRPS) have two ``act`` requests in a
round; turn-based games one, plus notifications such as Leduc's ``restart`` and
``receive_outcome``.

Built-in policies are trusted and run in the runner's process; they receive the request
*and* the match (so e.g. a RoShamBo bot can read the OpenSpiel state). LLM-written code
only ever sees ``Request.args``, which is plain data (str, int, float, bool, None, list,
dict).
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Sequence

import pyspiel

from csro.errors import ConfigError
from csro.gbnf import Rules


@dataclasses.dataclass(frozen=True)
class Request:
    """One method call the runner must make on the policy in ``seat``.

    ``method`` is one of the policy API's method names (``act``, ``restart``,
    ``receive_outcome``). ``args`` are passed positionally and are plain data, never
    changed once the request is issued (games may share them between requests, and the
    sandbox channel reuses the encoding of an ``args`` object it has already sent).
    ``legal`` is set for calls whose reply is an action: the legal action strings.
    """

    seat: int
    method: str
    args: tuple = ()
    legal: tuple[str, ...] | None = None

    @property
    def wants_action(self) -> bool:
        return self.legal is not None



class Match(abc.ABC):
    """One seeded match of a game between ``num_players`` seats.

    Lifecycle: while ``pending()`` is non-empty, answer every request of the round (in
    order) with ``answer(replies)``; then ``returns()`` gives the per-seat match returns.
    ``forfeit(seat)`` ends the match at once with the forfeit returns.
    """

    state: pyspiel.State  # the OpenSpiel state; for trusted built-in policies only

    @abc.abstractmethod
    def pending(self) -> list[Request]:
        """The requests of the current round; ``[]`` once the match is over."""

    @abc.abstractmethod
    def answer(self, replies: Sequence[Any]) -> None:
        """Apply replies (one per pending request, same order; notifications: None).

        Raises ``IllegalAction`` naming the first seat whose action reply is not legal;
        the state is then unchanged and the runner forfeits that seat.
        """

    @abc.abstractmethod
    def returns(self) -> list[float]:
        """Per-seat returns of the finished (or forfeited) match."""

    @abc.abstractmethod
    def forfeit(self, seat: int) -> None:
        """End the match now: ``seat`` gets the game's minimum return; see ``forfeit_returns``."""

    @property
    @abc.abstractmethod
    def over(self) -> bool:
        """True once the match is finished or forfeited."""


def forfeit_returns(num_players: int, seat: int, min_return: float) -> list[float]:
    """Returns of a match that ``seat`` forfeited.

    Our rule (the paper is silent): the forfeiting seat gets the game's minimum match
    return and the other seats share its negation equally, so zero-sum games stay
    zero-sum. In two-player zero-sum games the opponent thus gets the maximum return.
    """
    others = -min_return / (num_players - 1)
    return [min_return if p == seat else others for p in range(num_players)]


class BuiltinInstance(abc.ABC):
    """A trusted built-in policy playing one seat of one match."""

    @abc.abstractmethod
    def respond(self, request: Request, match: Match) -> Any:
        """Answer one request (an action string for ``act``, None for notifications)."""


class BuiltinPolicy(abc.ABC):
    """A named trusted policy of a game (``builtin:NAME``)."""

    name: str
    description: str

    @abc.abstractmethod
    def instance(self, seat: int, seed: int) -> BuiltinInstance:
        """A fresh instance for one seat of one match, seeded."""


class CodeGame(abc.ABC):
    """A game as code policies see it.

    Attributes:
      name: the name users type (``rrps``, ``leduc``, or the OpenSpiel game string).
      description: one line for ``csro games``.
      openspiel_game: the loaded ``pyspiel.Game`` matches are played on.
      num_players: seats per match.
      policy_class: the class name a policy source must define (``Agent`` ...).
      rules_text: the rules and objective in prose, for a prompt.
      api_spec: the exact policy API (a Python class skeleton with docstrings).
      return_range: (min, max) of one seat's match return.
      example_policy: a short, valid policy source for this game (a worked example).
      seat_roles, zero_sum, seat_rules_text, seat_api_spec, seat_population: what differs
        per seat and whether the game is zero-sum (defaults below; see each).
    """

    name: str
    description: str
    openspiel_game: pyspiel.Game
    num_players: int
    policy_class: str
    rules_text: str
    api_spec: str
    return_range: tuple[float, float]
    example_policy: str

    # -- capabilities: what callers may rely on, instead of asking which class a game is --
    #: Whether a trace line should show the observation passed to ``act`` (False where it
    #: only repeats what the trace already shows, e.g. RRPS's previous throws).
    trace_observations: bool = True
    #: Whether exact NashConv of code policies can be computed (a single-hand sequential
    #: OpenSpiel game with information-state strings; ``csro.evaluation.exploitability``).
    exact_exploitability: bool = False

    @property
    def check_matches(self) -> int:
        """Matches a smoke check plays so that a policy acts in every role: one per seat
        (the runner seats a policy at ``m % num_players`` in match ``m``), unless one match
        already covers every role (a symmetric game, or one that permutes seats each hand)."""
        return self.num_players

    def policy_grammar(self) -> tuple[str, Rules] | None:
        """A strict grammar whose every sentence completes a valid policy, if the game has one:
        ``(header source, rules)`` (``csro.gbnf``). None: the oracles' generic skeleton
        grammar is used."""
        return None

    @abc.abstractmethod
    def new_match(self, seed: int) -> Match:
        """A new match; ``seed`` fixes its chance events (and seat permutations)."""

    @abc.abstractmethod
    def builtins(self) -> dict[str, BuiltinPolicy]:
        """The game's built-in policies by name (always includes ``random``)."""

    @abc.abstractmethod
    def population(self) -> list[str]:
        """The evaluation population as policy references (``builtin:NAME`` ...)."""

    def named_populations(self) -> dict[str, list[str]]:
        """The populations a configuration may name (``evaluation.population``, ``csro eval
        --opponents``): ``default``, the evaluation population, and any the game adds (RRPS: the
        two parts of its tuning split)."""
        return {"default": self.population()}

    def evaluation_refs(self, population: str | Sequence[str]) -> list[str]:
        """The references of ``population``: a name of ``named_populations()``, or references.

        Raises ConfigError naming the known populations for an unknown name."""
        if not isinstance(population, str):
            return list(population)
        named = self.named_populations()
        if population not in named:
            raise ConfigError(f"unknown evaluation population {population!r} for game {self.name!r}; "
                              f"known: {', '.join(named)} (or a list of policy references)")
        return named[population]

    # -- general-sum and asymmetric games (issue 16); defaults describe the games above --

    #: The seats' roles when they differ (e.g. ``("smuggler", "sheriff")``), in seat order;
    #: ``None`` when every seat plays the same role, so one population can fill all seats.
    seat_roles: tuple[str, ...] | None = None

    @property
    def zero_sum(self) -> bool:
        """Whether every match's returns sum to the same constant (zero- or constant-sum).

        Read from the OpenSpiel game type; general-sum and identical-interest games are not.
        """
        utility = self.openspiel_game.get_type().utility
        return utility in (pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM)

    def seat_rules_text(self, seat: int) -> str:
        """The rules for a policy that plays ``seat`` (``rules_text`` unless roles differ)."""
        return self.rules_text

    def seat_api_spec(self, seat: int) -> str:
        """The policy API for ``seat`` (``api_spec`` unless roles differ)."""
        return self.api_spec

    def seat_population(self, seat: int) -> list[str]:
        """The evaluation opponents of a policy playing ``seat`` (``population()`` by default).

        Each reference is a policy that can fill every *other* seat of the match.
        """
        return self.population()
