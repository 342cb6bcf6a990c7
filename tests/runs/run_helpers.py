"""Helpers of the run tests: hand-written RRPS policies, a small config, the real CLI."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Callable

import yaml

from csro.store import RunStore, StoreError

FREQUENCY = '''\
class Agent:
    """Counters the opponent's most frequent throw."""

    BEATS = {"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}

    def __init__(self):
        self.counts = {"ROCK": 0, "PAPER": 0, "SCISSORS": 0}

    def act(self, observation):
        last = observation["opponent_action"]
        if last is not None:
            self.counts[last] += 1
        return self.BEATS[max(self.counts, key=self.counts.get)]
'''

BEAT_LAST = '''\
class Agent:
    """Beats the opponent's previous throw."""

    BEATS = {"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}

    def act(self, observation):
        last = observation["opponent_action"]
        return "ROCK" if last is None else self.BEATS[last]
'''

SECOND_ORDER = '''\
class Agent:
    """Predicts the opponent's next throw from what followed its last throw before."""

    BEATS = {"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}

    def __init__(self):
        self.history = []
        self.seen = {}

    def act(self, observation):
        last = observation["opponent_action"]
        if last is not None:
            if self.history:
                self.seen.setdefault(self.history[-1], []).append(last)
            self.history.append(last)
        if not self.history or self.history[-1] not in self.seen:
            return "PAPER"
        following = self.seen[self.history[-1]]
        return self.BEATS[max(set(following), key=following.count)]
'''

POLICIES = {"a_frequency.py": FREQUENCY, "b_beat_last.py": BEAT_LAST, "c_second_order.py": SECOND_ORDER}


def small_config(replies: pathlib.Path, **overrides) -> dict:
    config = {
        "game": "rrps(num_throws=200)",
        "iterations": 3,
        "seed": 7,
        "matches_per_cell": 2,
        "oracle": {"kind": "zero_shot", "samples": 1, "max_repairs": 0, "grammar_fallback": False},
        "llm": {"provider": "files", "path": str(replies)},
        "evaluation": {"population": ["builtin:rockbot", "builtin:randbot", "builtin:greenberg",
                                      "builtin:copybot"], "matches_per_opponent": 2},
        "execution": {"processes": 2},
    }
    for key, value in overrides.items():
        config[key] = value
    return config


def write_config(path: pathlib.Path, config: dict) -> pathlib.Path:
    path.write_text(yaml.safe_dump(config))
    return path


def csro(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """Run the real ``csro`` command in a subprocess."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run([sys.executable, "-m", "csro", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600, **kwargs)
    if check and done.returncode != 0:
        raise AssertionError(f"csro {' '.join(map(str, args))} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done


def status(directory: pathlib.Path) -> dict:
    return json.loads(csro("status", directory, "--json").stdout)


def same_run(source: pathlib.Path, target: pathlib.Path, **sections) -> pathlib.Path:
    """A new run directory ``target`` with ``source``'s configuration and secret (issue 37) and
    nothing done: resumed, it is ``source``'s run played from its start, uninterrupted, with the
    same match seeds; ``sections`` replace sections of the configuration (``execution=...``:
    another layout; ``llm=...``: another provider or budget)."""
    with RunStore.open(source) as store:
        config, secret = store.config(), store.secret()
    RunStore.create(target, {**config, **sections}, secret).close()
    return target


def kill_after_iteration(config: pathlib.Path, directory: pathlib.Path, iteration: int = 1) -> None:
    """Start ``csro run`` and ``kill -9`` its main process once ``iteration`` is recorded."""
    kill_once(config, directory, lambda store: any(d["iteration"] == iteration for d in store.iterations()))


def kill_once(config: pathlib.Path, directory: pathlib.Path, recorded: Callable[[RunStore], bool]) -> None:
    """Start ``csro run`` and ``kill -9`` its main process once ``recorded(store)`` holds."""
    proc = subprocess.Popen([sys.executable, "-m", "csro", "run", str(config), "--out", str(directory)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with RunStore.open(directory) as store:
                    if recorded(store):
                        break
            except StoreError:  # not created yet, or its schema not yet committed
                pass
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)  # the main process only, as `kill -9 PID` would
        proc.wait()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # orphaned workers, if any
        except ProcessLookupError:
            pass
