"""Helpers for the game tests: play a match in-process between built-ins or tiny policies."""

from __future__ import annotations

import pytest

from csro.games import BuiltinInstance


class Scripted(BuiltinInstance):
    """A test policy: ``choose(request) -> reply`` for act requests, None for notifications."""

    def __init__(self, choose):
        self.choose = choose
        self.calls = []

    def respond(self, request, match):
        self.calls.append(request)
        return self.choose(request) if request.wants_action else None


def play_match(game, seats, seed):
    """Play one match; ``seats`` are built-in names or BuiltinInstance objects."""
    match = game.new_match(seed)
    table = game.builtins()
    inst = [
        s if isinstance(s, BuiltinInstance) else table[s].instance(i, seed * 31 + i)
        for i, s in enumerate(seats)
    ]
    while not match.over:
        requests = match.pending()
        match.answer([inst[r.seat].respond(r, match) for r in requests])
    assert match.pending() == []
    return match.returns()


@pytest.fixture
def play():
    return play_match


@pytest.fixture
def scripted():
    return Scripted


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    """Keep CFR+ caches of tests out of the user's cache."""
    monkeypatch.setenv("CSRO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "csro-cache"))


class FromSource(BuiltinInstance):
    """Runs a policy source in-process (tests only; real runs use the sandbox)."""

    def __init__(self, source, class_name):
        namespace = {"__name__": "policy"}
        exec(compile(source, "<policy>", "exec"), namespace)
        self.obj = namespace[class_name]()

    def respond(self, request, match):
        return getattr(self.obj, request.method)(*request.args)


@pytest.fixture
def from_source():
    return FromSource
