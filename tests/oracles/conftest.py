"""Fakes for the oracle tests: a scripted LLM client (replies by call step), an arena whose
evaluation reads a program's ``u=`` marker, and a log.

Only our own logic is faked: programs are still extracted, and checked and traced in the real
sandbox (a ``MatchArena`` over a temporary run store).
"""

from __future__ import annotations

import re

import pytest

from csro.arena import MatchArena
from csro.config import OracleConfig
from csro.evaluation import resolve
from csro.games import load_game
from csro.llm import LLMReply, LLMSession
from csro.oracles import Feedback, Opponent, OracleContext, Target
from tests.conftest import ListLog, arena_for


def program(u: float, move: str = "ROCK") -> str:
    """A valid RRPS program whose fake utility is written in its code (programs that differ
    only in a comment are one candidate)."""
    return f"class Agent:\n    u={u}\n\n    def act(self, observation):\n        return {move!r}\n"


def fenced(source: str) -> str:
    return f"Here you go:\n```python\n{source}```\nGood luck!"


class ScriptedLLM:
    """Replies by call step: ``script[step]`` is a list (one per sample or per call, in order)
    of texts; ``ERROR`` marks a failed call. Unscripted steps get a non-code reply."""

    ERROR = object()
    grammar = False

    def __init__(self, script: dict[str, list]):
        self.script = {k: list(v) for k, v in script.items()}
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        queue = self.script.get(request.key.step, [])
        text = queue.pop(0) if queue else "I cannot write code today."
        if text is ScriptedLLM.ERROR:
            return LLMReply(request.key, "", "fake", "fake", error="HTTP 503 after 4 attempts: busy")
        return LLMReply(request.key, text, "fake", "fake", prefill=request.prefill)

    def complete_many(self, requests):
        return [self.complete(r) for r in requests]

    def steps(self):
        return [str(r.key) for r in self.requests]


class FakeEvaluator:
    """u from the ``u=`` marker of a program (in code or a comment); counts evaluations."""

    def __init__(self):
        self.calls = []

    def __call__(self, source: str) -> Feedback:
        self.calls.append(source)
        match = re.search(r"\bu=(-?[0-9.]+)", source)
        u = float(match.group(1)) if match else -1.0
        return Feedback(u, {"p0": u}, {}, (), 4)


class FakeArena:
    """A real ``MatchArena`` (sandboxed checks, plays and traces) whose ``evaluate`` is faked."""

    def __init__(self, real: MatchArena, evaluate):
        self.real = real
        self.evaluator = evaluate
        self.matches = real.matches

    def check(self, sources, seat=None):
        return self.real.check(sources, seat)

    def evaluate(self, source, target):
        return self.evaluator(source)

    def play(self, sources, opponents, matches=None):
        return self.real.play(sources, opponents, matches)

    def trace(self, source, opponent, *seed_parts):
        return self.real.trace(source, opponent, *seed_parts)



@pytest.fixture(scope="session")
def rrps():
    return load_game("rrps(num_throws=100)")


@pytest.fixture
def real_arena(rrps, tmp_path):
    with arena_for(rrps, tmp_path / "arena", seed=7) as arena:
        yield arena


@pytest.fixture
def make_ctx(rrps, real_arena):
    def make(llm, *, opponents=None, evaluate=None, iteration=3, **config):
        config.setdefault("prompt", "plain")
        log = ListLog()
        if opponents is None:
            opponents = [Opponent("p0", 1.0, resolve("builtin:rockbot", rrps), "always ROCK")]
        ctx = OracleContext(game=rrps, target=Target(iteration, 0, tuple(opponents)),
                            llm=LLMSession(llm, iteration, 0.8, 7),
                            arena=FakeArena(real_arena, evaluate or FakeEvaluator()),
                            config=OracleConfig(**config), log=log)
        return ctx, log.events
    return make
