"""A robot controller class run in a sandboxed worker process, never in the simulator's.

The controller API (the AOR paper's whole-class policy, Kumar arXiv 2603.04466)::

    class Controller:
        def reset(self) -> None: ...                  # called at the start of every episode
        def get_action(self, obs: dict) -> list: ...  # 7 numbers in [-1, 1]
        phase: str                                    # optional: the phase it is in

``obs`` is a plain dict of lists of floats (``robot0_eef_pos``, ``cube_pos`` ...); numpy may
be imported. The action is ``[dx, dy, dz, dax, day, daz, grip]`` for robosuite's OSC_POSE
controller (deltas scaled to 5 cm and 0.5 rad), grip -1 open, +1 closed. Naming the phase
is how a controller reports where it is: whatever ``self.phase`` holds after each
``get_action`` is read back (a str of at most 40 characters, else ignored) and becomes the
episode's phase log.

Our mechanics (the paper gives none): one ``PolicyWorker`` (``csro.policies``: its own
process, network namespace, uid, rlimits, audit hook; plain JSON frames only) per evaluation;
every episode gets a fresh instance; one round trip per step carries ``get_action(obs)`` and
the read of ``phase``. The worker holds no simulator: a controller that imports robosuite or
mujoco can at most build a simulation of its own, which the host never looks at.
"""

from __future__ import annotations

import dataclasses
import math
import time

from csro.policies import Call, Forfeit, PolicyWorker, SandboxLimits

from ._config import ControllerLimits

CLASS_NAME = "Controller"
ACTION_DIM = 7
PHASE_CHARS = 40
_INSTANCE = 0


@dataclasses.dataclass(frozen=True)
class Step:
    """One controller step: the clamped action, or why the episode must end (``end``)."""

    action: list[float] | None
    phase: str | None
    seconds: float
    end: str | None = None
    detail: str = ""


def check_action(value: object, dim: int = ACTION_DIM) -> tuple[list[float] | None, str]:
    """The action clamped to [-1, 1], or (None, why it is not an action)."""
    if type(value) is not list or len(value) != dim:
        shape = f"a list of {len(value)}" if type(value) is list else f"a {type(value).__name__}"
        return None, f"get_action returned {shape}, not a list of {dim} numbers"
    out = []
    for i, x in enumerate(value):
        if type(x) not in (int, float) or not math.isfinite(x):
            return None, f"get_action returned {x!r} at index {i}, not a finite number"
        out.append(min(1.0, max(-1.0, float(x))))
    return out, ""


class ControllerProcess:
    """One controller source in one sandboxed worker, driven episode by episode."""

    def __init__(self, source: str, limits: ControllerLimits = ControllerLimits(), *, seed: int = 0,
                 dim: int = ACTION_DIM):
        self.limits = limits
        self.dim = dim
        self.worker = PolicyWorker(source, CLASS_NAME, SandboxLimits(
            memory_mb=limits.memory_mb, cpu_seconds=limits.cpu_seconds, start_seconds=limits.start_seconds,
            call_seconds=limits.step_seconds, match_seconds=limits.episode_seconds), seed=seed)
        self.episode_seconds = 0.0

    def start(self) -> Forfeit | None:
        """Start the worker and compile the class: None, or why it cannot run."""
        return self.worker.start()

    def reset(self) -> Forfeit | None:
        """A fresh controller instance, ``reset()`` called: None, or why it failed."""
        self.episode_seconds = 0.0
        begin = time.monotonic()
        results = self.worker.call([Call(_INSTANCE, "__del__"), Call(_INSTANCE, "__init__"),
                                    Call(_INSTANCE, "reset")])
        self.episode_seconds += time.monotonic() - begin
        return next((r for r in results if isinstance(r, Forfeit)), None)

    def act(self, obs: dict) -> Step:
        """One ``get_action(obs)`` with the phase read back, checked and clamped."""
        begin = time.monotonic()
        action, phase = self.worker.call([Call(_INSTANCE, "get_action", (obs,)),
                                          Call(_INSTANCE, "__getattribute__", ("phase",))])
        seconds = time.monotonic() - begin
        self.episode_seconds += seconds
        phase = phase[:PHASE_CHARS] if type(phase) is str else None
        if isinstance(action, Forfeit):
            return Step(None, phase, seconds, action.reason.value, action.detail)
        if self.episode_seconds > self.limits.episode_seconds:
            return Step(None, phase, seconds, "episode_timeout",
                        f"the controller's calls took more than {self.limits.episode_seconds:g} s in this episode")
        clamped, why = check_action(action, self.dim)
        if clamped is None:
            return Step(None, phase, seconds, "bad_action", why)
        return Step(clamped, phase, seconds)

    def output(self) -> str:
        return self.worker.output()

    def close(self) -> None:
        self.worker.close()

    def __enter__(self) -> "ControllerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
