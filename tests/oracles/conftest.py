"""Fakes for the oracle tests: a scripted LLM client (replies by call step) and an evaluator.

Only our own logic is faked: programs are still extracted and checked in the real sandbox.
"""

from __future__ import annotations

import re

import pytest

from csro.config import OracleConfig
from csro.evaluation.policy_ref import resolve
from csro.games import load_game
from csro.llm._types import LLMReply
from csro.oracles import Feedback, Opponent, OracleContext


def program(u: float, move: str = "ROCK") -> str:
    """A valid RRPS program whose fake utility is written in it."""
    return f"class Agent:\n    def act(self, observation):\n        return {move!r}  # u={u}\n"


def fenced(source: str) -> str:
    return f"Here you go:\n```python\n{source}```\nGood luck!"


class ScriptedLLM:
    """Replies by call step: ``script[step]`` is a list (one per sample or per call, in order)
    of texts; ``ERROR`` marks a failed call. Unscripted steps get a non-code reply."""

    ERROR = object()

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
    """u from the ``# u=`` marker of a program; counts evaluations."""

    def __init__(self):
        self.calls = []

    def __call__(self, source: str) -> Feedback:
        self.calls.append(source)
        match = re.search(r"# u=(-?[0-9.]+)", source)
        u = float(match.group(1)) if match else -1.0
        return Feedback(u, {"p0": u}, {}, (), 4)


@pytest.fixture(scope="session")
def rrps():
    return load_game("rrps(num_throws=100)")


@pytest.fixture
def make_ctx(rrps):
    def make(llm, *, opponents=None, evaluate=None, iteration=3, **config):
        config.setdefault("prompt", "plain")
        events = []
        if opponents is None:
            opponents = [Opponent("p0", 1.0, resolve("builtin:rockbot", rrps), "always ROCK")]
        ctx = OracleContext(game=rrps, iteration=iteration, player=0, opponents=opponents, llm=llm,
                            evaluate=evaluate or FakeEvaluator(), config=OracleConfig(**config),
                            temperature=0.8, seed=7, log=lambda kind, data: events.append((kind, data)))
        return ctx, events
    return make
