"""OpenSpiel games as code policies see them (rules text, policy API, matches, built-ins).

``load_game(name)`` gives a ``CodeGame``: ``rrps`` and ``leduc`` are the two games of the
CSRO paper (Hennes et al., arXiv 2603.10098) with its policy APIs; ``ipd`` is the iterated
prisoner's dilemma against the axelrod library (``games.ipd``); any other name is an
OpenSpiel game string played through the generic ``Agent`` API (``games.generic``), with
per-seat roles for ``sheriff`` (``games.sheriff``).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import re

import pyspiel

from csro.errors import GameError, IllegalAction
from csro.games._base import (
    BuiltinInstance,
    BuiltinPolicy,
    CodeGame,
    Match,
    Request,
    forfeit_returns,
)
from csro.games._common import builtin as get_builtin
from csro.games._common import quiet_stderr
from csro.registry import Registry

__all__ = [
    "GAMES",
    "BuiltinInstance",
    "BuiltinPolicy",
    "CodeGame",
    "IllegalAction",
    "Match",
    "Request",
    "forfeit_returns",
    "get_builtin",
    "list_games",
    "load_game",
    "quiet_stderr",
]

_EXAMPLES = [
    ("rrps", "Repeated Rock-Paper-Scissors, 1000 throws; population: the 43 RoShamBo bots"),
    ("leduc", "Repeated Leduc hold'em, 100 hands, seats permuted per hand; population: "
              "CFR+, AlwaysCall, AlwaysFold"),
    ("kuhn_poker", "Kuhn poker, 2 players, one hand (generic Agent API)"),
    ("leduc_poker", "Leduc hold'em, one hand (generic Agent API)"),
    ("goofspiel(num_cards=4,imp_info=True,points_order=descending)",
     "Goofspiel with 4 cards, simultaneous hidden bids (generic Agent API)"),
    ("liars_dice", "Liar's dice, 2 players, one die each (generic Agent API)"),
    ("kuhn_poker(players=3)", "Kuhn poker, 3 players (generic Agent API)"),
    ("leduc_poker(players=3)", "Leduc hold'em, 3 players, one hand (generic Agent API)"),
    ("ipd", "Iterated prisoner's dilemma, 200 rounds, general-sum; population: the axelrod "
            "library's 224 strategies"),
    ("sheriff", "Sheriff: smuggler (seat 0) vs sheriff (seat 1), asymmetric and general-sum; "
                "population: honest, greedy, briber, random"),
]


def list_games() -> list[tuple[str, str]]:
    """(name, description) of the paper's games and a few generic OpenSpiel examples.

    Any other OpenSpiel game string works too (``pyspiel.registered_names()``).
    """
    return list(_EXAMPLES)


class OwnGame:
    """A registry row of a game with its own API and at most one integer parameter
    (``rrps(num_throws=50)``): the class, imported when the row is used."""

    def __init__(self, path: str, parameter: str):
        self.path, self.parameter = path, parameter

    def __call__(self, name: str) -> CodeGame:
        match = re.fullmatch(r"(\w+)(?:\((\w+)=(\d+)\))?", name)
        if match is None:
            raise GameError(f"invalid game {name!r}: give {self.parameter} as a whole number, e.g. "
                            f"{name.split('(')[0]}({self.parameter}=10)")
        short, parameter, value = match.groups()
        if parameter is not None and parameter != self.parameter:
            raise GameError(f"invalid game {name!r}: {short} takes only {self.parameter}, "
                            f"e.g. {short}({self.parameter}=10)")
        kwargs = {} if parameter is None else {self.parameter: int(value)}
        if kwargs and kwargs[self.parameter] < 1:
            raise GameError(f"invalid game {name!r}: {self.parameter} must be at least 1")
        module, _, cls = self.path.partition(":")
        return getattr(importlib.import_module(module), cls)(**kwargs)


def _sheriff(name: str) -> CodeGame:
    from csro.games.sheriff import SheriffGame

    return SheriffGame(name, _openspiel(name))


# A game with its own API or seats: one row, a callable of the game string (``rrps``,
# ``sheriff(...)``) to its CodeGame. Any other name is an OpenSpiel game string played through
# the generic ``Agent`` API (``games.generic``).
GAMES = Registry("game", "game", {
    "rrps": OwnGame("csro.games.rrps:RRPSGame", "num_throws"),
    "leduc": OwnGame("csro.games.leduc:LeducGame", "num_hands"),
    "ipd": OwnGame("csro.games.ipd:IPDGame", "turns"),
    "sheriff": _sheriff,  # the seats play different roles (games.sheriff)
})


@functools.cache
def load_game(name: str) -> CodeGame:
    """The ``CodeGame`` called ``name`` (cached per name).

    ``rrps`` and ``leduc`` are the paper's games (``rrps(num_throws=N)`` and
    ``leduc(num_hands=N)`` change their length, and are the names such games report);
    anything else is passed to
    ``pyspiel.load_game``. Raises GameError for an unknown or invalid game string.
    """
    if not isinstance(name, str) or not name.strip():
        raise GameError(f"invalid game name {name!r}; try 'rrps', 'leduc' or an OpenSpiel game string")
    name = name.strip()
    short = re.match(r"[^(]*", name).group(0).strip()
    if short in GAMES:
        return GAMES.load(short)(name)
    from csro.games.generic import GenericGame

    return GenericGame(name, _openspiel(name))


def _openspiel(name: str) -> pyspiel.Game:
    """The OpenSpiel game of a game string, or GameError naming the closest known names."""
    short = re.match(r"[^(]*", name).group(0).strip()
    if short not in pyspiel.registered_names():
        close = difflib.get_close_matches(short, [*GAMES.names(), *pyspiel.registered_names()], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise GameError(
            f"unknown game {name!r}{hint} (`csro games` lists the named games; any OpenSpiel "
            f"game string also works, {len(pyspiel.registered_names())} are registered)"
        )
    try:
        with quiet_stderr():
            return pyspiel.load_game(name)
    except pyspiel.SpielError as exc:
        raise GameError(f"cannot load OpenSpiel game {name!r}: {exc}") from None
