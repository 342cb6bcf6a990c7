"""Shared pytest configuration and helpers."""

from __future__ import annotations

import contextlib
import pathlib
import tempfile
from typing import Any, Callable, Iterable, Iterator

import pytest

from csro.arena import MatchArena
from csro.evaluation.backends import Backend, LocalBackend
from csro.games import CodeGame
from csro.policies import SandboxLimits
from csro.simulate import StoredSimulator
from csro.store import RunStore


def pytest_collection_modifyitems(items):
    """Files with a ``slow`` test first, each file's tests together and in their order.

    ``make test`` hands whole files to its two workers in this order (``--dist loadfile
    --no-loadscope-reorder``), so the long files start first and the short ones fill the end
    (issue 39); a file stays on one worker, where its module fixtures are made once.
    """
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


def one_per_kind_fast(cases: Iterable[Any], kind: Callable[[Any], str], ident: Callable[[Any], str]) -> list:
    """``cases`` as pytest params: the first case of each kind runs in ``make test-fast``, every
    other one is marked ``slow`` (``make test`` runs them all). A corpus of attacks keeps each of
    its kinds in the quick loop without paying there for every variant (issue 39)."""
    seen: set[str] = set()
    params = []
    for case in cases:
        marks = (pytest.mark.slow,) if kind(case) in seen else ()
        seen.add(kind(case))
        params.append(pytest.param(case, marks=marks, id=ident(case)))
    return params


@contextlib.contextmanager
def arena_for(game: CodeGame, directory: pathlib.Path, *, backend: Backend | None = None, seed: int = 0,
              matches: int = 4, limits: SandboxLimits = SandboxLimits()) -> Iterator[MatchArena]:
    """A real ``MatchArena`` over a fresh run store in ``directory`` (one local process by default)."""
    with RunStore.create(directory, {}) as store:
        sim = StoredSimulator(game, store, backend or LocalBackend(1), seed=seed, limits=limits)
        yield MatchArena(game, sim, matches=matches)


class ListLog:
    """An oracle's log (``csro.oracles.OracleLog``) as a list of ``(kind, data)``; no archive."""

    def __init__(self):
        self.events = []

    def event(self, kind, data):
        self.events.append((kind, data))

    def add_program(self, data, fitness):
        pass

    def programs(self, before_iteration):
        return []

    def support(self, iteration):
        return {}


class CountingBackend(LocalBackend):
    """The real local pool (one process), counting the matches it is asked to play."""

    def __init__(self):
        super().__init__(1)
        self.played = 0

    def run(self, chunks, progress=None):
        results = super().run(chunks, progress)
        self.played += len(results)
        return results


def check_program(game: CodeGame, source: str) -> str | None:
    """The real sandbox check of one program (``MatchArena.check``) in a throwaway run store."""
    with tempfile.TemporaryDirectory() as tmp, arena_for(game, pathlib.Path(tmp) / "run") as arena:
        return arena.check([source])[0]
