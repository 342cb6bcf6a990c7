"""Small helpers shared by the game modules: seeded chance, built-in lookup, quiet loading.

Nothing here knows any game's rules; chance events are always sampled from
``state.chance_outcomes()``, i.e. from OpenSpiel's own distribution.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Iterator, Sequence

import numpy as np
import pyspiel

from csro.errors import GameError
from csro.games._base import BuiltinInstance, BuiltinPolicy, CodeGame, Match, Request


def rng(seed: int) -> np.random.Generator:
    """The match's random generator. Any non-negative int works; negative ints are folded."""
    return np.random.default_rng(int(seed) & (2**128 - 1))


def sample_chance(state: pyspiel.State, u: float) -> int:
    """The chance outcome of ``state`` at quantile ``u`` in [0, 1) of OpenSpiel's distribution.

    Inverse-CDF sampling with a caller-supplied uniform lets a match pre-draw its uniforms
    (so e.g. every Leduc hand's cards are fixed by the seed whatever the players do).
    """
    outcomes = state.chance_outcomes()
    acc = 0.0
    for action, prob in outcomes:
        acc += prob
        if u < acc:
            return action
    return outcomes[-1][0]  # rounding: the probabilities summed to a hair under u


def builtin(game: CodeGame, name: str) -> BuiltinPolicy:
    """``game``'s built-in policy ``name``; GameError naming the valid ones otherwise."""
    table = game.builtins()
    try:
        return table[name]
    except (KeyError, TypeError):
        valid = ", ".join(sorted(table))
        raise GameError(
            f"unknown built-in policy {name!r} for game {game.name!r}; valid: {valid}"
        ) from None


class _UniformInstance(BuiltinInstance):
    __slots__ = ("_u", "_i", "_rng")

    _BLOCK = 1024

    def __init__(self, seed: int):
        self._rng = rng(seed)
        self._u = self._rng.random(self._BLOCK).tolist()
        self._i = 0

    def respond(self, request: Request, match: Match) -> Any:
        legal = request.legal
        if legal is None:
            return None
        i = self._i
        if i == self._BLOCK:
            self._u = self._rng.random(self._BLOCK).tolist()
            i = 0
        self._i = i + 1
        return legal[int(self._u[i] * len(legal))]


class UniformRandom(BuiltinPolicy):
    """``random``: a uniformly random legal action every time (seeded numpy Generator)."""

    name = "random"
    description = "uniformly random legal action (seeded)"

    def instance(self, seat: int, seed: int) -> BuiltinInstance:
        return _UniformInstance(seed)

    def action_probabilities(self, info_state: str, player: int, legal: Sequence[int]) -> dict[int, float]:
        """The exact policy (uniform over ``legal``), for exact exploitability."""
        return {a: 1.0 / len(legal) for a in legal}


def sample_from(actions: Sequence[str], probs: Sequence[float], u: float) -> str:
    """The action at quantile ``u`` of the distribution ``probs`` over ``actions``."""
    acc = 0.0
    for action, prob in zip(actions, probs):
        acc += prob
        if u < acc:
            return action
    return actions[-1]


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 for a moment.

    OpenSpiel prints ``OpenSpiel exception: ...`` on stderr before raising ``SpielError``;
    we re-raise its message as one GameError line, so the echo would only duplicate it.
    """
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all
        yield
        return
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def plain_number(x: float) -> int | float:
    """``3.0`` → ``3``; other floats unchanged (chip counts are whole in Leduc)."""
    xi = int(x)
    return xi if xi == x else float(x)
