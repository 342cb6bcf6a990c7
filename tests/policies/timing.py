"""The timing channel of lockstep batching (issue 37): what a policy learns from its clock.

A policy can always read a clock (``time.perf_counter`` needs no system call), so the time
between its calls is an input it has: it holds the other seats' compute. The runner gives the
workers their calls before the built-ins answer theirs, so before a policy answers a round the
time it can measure holds the other seats' work on *earlier* rounds only, whose moves the game
shows it anyway. This module measures that and attacks it, with an opponent whose compute time
gives its move away (``SLEEP`` seconds of work whenever it throws ROCK): a built-in one (in the
runner process) and a code one (in a sandboxed worker of its own).

- ``probe``: a policy that times its calls and, at its last throw, reports (as the text of an
  exception, which the runner records) how well a long gap before round r predicted the
  opponent's throw of round r (the channel, were it open) and of round r - 1 (what it may know);
- attempts (``ATTACKERS``): policies that play PAPER whenever the gap before their call was
  long, timed from their last call or from their last reply; honest play wins nothing, a working
  attack wins about a third of the throws.

Run by ``test_integrity.py`` in-process and, when that is root, as an ordinary user through
``python timing.py`` (prints one JSON line); ``python timing.py --measure`` prints the probe's
figures (docs/sandbox.md).
"""

from __future__ import annotations

import json
import os
import sys
import time

from csro.evaluation import runner
from csro.evaluation.policy_ref import code_policy
from csro.games import load_game
from csro.games._base import BuiltinInstance, BuiltinPolicy
from csro.games._common import rng
from csro.policies import SandboxLimits

SLEEP = 0.01  # seconds of work a sleeper does when it throws ROCK (a shared machine preempts for less)
ACTIONS = ("ROCK", "PAPER", "SCISSORS")
LIMITS = SandboxLimits(call_seconds=20.0, match_seconds=600.0)
# The attempts play shorter matches than the probe (issue 39: the sleeper's work is most of the
# test's time): over 2 matches of 400 throws the mean return of honest play has sd ~11.5 and
# stays under HONEST; a working attack wins about 0.22 a throw, ~+88.
ATTACK_GAME = "rrps(num_throws=400)"
HONEST = 45.0

SLEEPER = f'''
import random, time

class Agent:
    def act(self, observation):
        a = random.choice({ACTIONS!r})
        if a == "ROCK":
            end = time.perf_counter() + {SLEEP}
            while time.perf_counter() < end:
                pass
        return a
'''

PROBE = f'''
import json, random, time

class Agent:
    def __init__(self):
        self.last, self.gaps, self.theirs = None, [], []

    def act(self, observation):
        now = time.perf_counter()
        if self.last is not None:
            self.gaps.append(now - self.last)
        self.last = now
        if observation["opponent_action"] is not None:
            self.theirs.append(observation["opponent_action"])
        if len(self.theirs) == 999:  # the last throw: gaps[i] was timed before round i + 1
            long = [g > {SLEEP / 2} for g in self.gaps]
            def hit(shift):
                pairs = [(l, self.theirs[i + 1 - shift] == "ROCK") for i, l in enumerate(long)
                         if 0 <= i + 1 - shift < len(self.theirs)]
                agree = sum(l == r for l, r in pairs) / len(pairs)
                rock = sum(r for _, r in pairs) / len(pairs)
                return {{"agree": round(agree, 3), "base": round(max(rock, 1 - rock), 3)}}
            median = sorted(self.gaps)[len(self.gaps) // 2]
            raise RuntimeError("PROBE " + json.dumps({{"current": hit(0), "previous": hit(1),
                                                     "median_gap_us": round(median * 1e6)}}))
        return random.choice({ACTIONS!r})
'''

ATTACKERS = {
    "gap_between_calls": f'''
import random, time

class Agent:
    def __init__(self):
        self.last = None

    def act(self, observation):
        now = time.perf_counter()
        long = self.last is not None and now - self.last > {SLEEP / 2}
        self.last = now
        return "PAPER" if long else random.choice({ACTIONS!r})
''',
    "gap_since_reply": f'''
import random, time

class Agent:
    def __init__(self):
        self.sent = None

    def act(self, observation):
        long = self.sent is not None and time.monotonic_ns() - self.sent > {SLEEP / 2 * 1e9}
        reply = "PAPER" if long else random.choice({ACTIONS!r})
        self.sent = time.monotonic_ns()
        return reply
''',
}


class _SleeperInstance(BuiltinInstance):
    def __init__(self, seed: int):
        self._u = rng(seed).random(2048).tolist()
        self._i = 0

    def respond(self, request, match):
        a = ACTIONS[int(self._u[self._i] * 3)]
        self._i += 1
        if a == "ROCK":
            end = time.perf_counter() + SLEEP
            while time.perf_counter() < end:
                pass
        return a


class Sleeper(BuiltinPolicy):
    """A built-in whose compute time gives its throw away (a test opponent, never registered)."""

    name = "sleeper"
    description = "throws at random, working SLEEP seconds before each ROCK"

    def instance(self, seat: int, seed: int) -> BuiltinInstance:
        return _SleeperInstance(seed)


class _WithSleeper:
    """The rrps game with the sleeper among its built-ins (for this module's matches only)."""

    def __init__(self, game):
        self._game = game

    def __getattr__(self, name):
        return getattr(self._game, name)

    def builtins(self):
        return {**self._game.builtins(), "sleeper": Sleeper()}


def play(source: str, opponent: str, matches: int = 2, seed: int = 0, name: str = "rrps") -> list:
    """``matches`` matches of game ``name`` (an rrps) between ``source`` and the sleeper
    (``builtin`` or ``code``), in this process's runner with real sandboxed workers; their results."""
    game = load_game(name)
    me = runner.SeatRef.of(code_policy("attacker", source, game))
    other = runner.SeatRef("sleeper", SLEEPER, None, game.policy_class) if opponent == "code" else \
        runner.SeatRef("builtin:sleeper", None, "sleeper", game.policy_class)
    jobs = tuple(runner.MatchJob((me, other) if m % 2 == 0 else (other, me), seed * 1000 + m) for m in range(matches))
    original = runner.load_game
    runner.load_game = lambda name: _WithSleeper(original(name))
    try:
        return runner.play_chunk(runner.Chunk(name, jobs, LIMITS))
    finally:
        runner.load_game = original


def attacker_return(name: str, opponent: str) -> float:
    """The mean return of attacker ``name`` against the ``opponent`` sleeper."""
    results = play(ATTACKERS[name], opponent, name=ATTACK_GAME)
    assert all(r.forfeit is None for r in results), [r.forfeit for r in results]
    return sum(r.returns[r.policies.index("attacker")] for r in results) / len(results)


def probe(opponent: str) -> dict:
    """The probe's figures against the ``opponent`` sleeper (one match)."""
    (result,) = play(PROBE, opponent, matches=1)
    detail = result.forfeit[2]
    return json.loads(detail[detail.index("Error: PROBE ") + 13:].splitlines()[0])


def verdict(report: dict) -> list[str]:
    """What is wrong with ``run()``'s report: an attempt that beat honest play, a probe that
    learnt a move it was about to face, or one that measured nothing (the control)."""
    wrong = [f"{k} scored {v}" for k, v in report["attackers"].items() if abs(v) > HONEST]
    for opponent, p in report["probe"].items():
        if p["current"]["agree"] > p["current"]["base"] + 0.05:
            wrong.append(f"the clock told the move about to be played ({opponent}): {p}")
        if p["previous"]["agree"] < p["previous"]["base"] + 0.1:
            wrong.append(f"the probe did not see the opponent's work ({opponent}): {p}")
    return wrong


def run() -> dict:
    return {"uid": os.getuid(),
            "attackers": {f"{n}/{o}": attacker_return(n, o) for n in ATTACKERS for o in ("builtin", "code")},
            "probe": {o: probe(o) for o in ("builtin", "code")}}


if __name__ == "__main__":
    if "--measure" in sys.argv:
        print(json.dumps({o: probe(o) for o in ("builtin", "code")}))
    else:
        print(json.dumps(run()))
