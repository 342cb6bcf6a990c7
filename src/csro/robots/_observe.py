"""Observe: the structured outcome of one episode, and the text an LLM reads of it.

What the AOR paper (Kumar, arXiv 2603.04466) lists as observed: reward, step count, the phase
log, the minimum gripper–object distance, an oscillation flag, and key frames. Our
definitions of each (the paper gives names, not formulas):

- ``reward``: the sum of robosuite's shaped reward; ``progress``: its running maximum, a
  staged measure (reach, grasp, lift, ...) in [0, 1];
- ``progress_stopped``: the last step at which ``progress`` rose by at least 0.01, and the
  phase the controller was in then — where the attempt stalled;
- ``min_distance``: the least distance between the end effector and the task's object;
- ``oscillation``: True if the end effector reversed its direction of motion along one axis
  (moving faster than 1 mm a step before and after) at least 4 times within 40 steps (2 s) —
  a controller hunting around a target rather than a single approach, descend and lift;
- the phase log: each change of the controller's ``phase`` with the step it happened at;
- key frames: at each phase change (at most ``max_frames - 1``) and at the end (``Observer``
  says when; the episode runner renders them).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

WINDOW = 40
REVERSALS = 4
MOVING_M = 0.001
PROGRESS_EPS = 0.01


@dataclasses.dataclass
class Observer:
    """Accumulates one episode, step by step; ``outcome`` builds the structured record."""

    object_key: str
    max_frames: int = 6
    eef: list = dataclasses.field(default_factory=list)
    phases: list = dataclasses.field(default_factory=list)  # [step, phase] at each change
    reward: float = 0.0
    progress: float = 0.0
    stalled_at: int = 0
    min_distance: float = math.inf
    frames_taken: int = 0
    controller_seconds: float = 0.0

    def see(self, step: int, obs: dict, reward: float | None) -> None:
        """The observation at ``step`` (after the action of step ``step - 1``) and its reward."""
        eef = obs.get("robot0_eef_pos")
        obj = obs.get(self.object_key)
        if eef is not None:
            self.eef.append(eef)
            if obj is not None:
                self.min_distance = min(self.min_distance, float(np.linalg.norm(np.subtract(eef, obj))))
        if reward is not None:
            self.reward += reward
            if reward >= self.progress + PROGRESS_EPS:
                self.stalled_at = step
            self.progress = max(self.progress, reward)

    def phase(self, step: int, phase: str | None) -> bool:
        """Log the controller's phase; True when it changed and a key frame should be taken."""
        if phase is None or (self.phases and self.phases[-1][1] == phase):
            return False
        self.phases.append([step, phase])
        if self.frames_taken < self.max_frames - 1:
            self.frames_taken += 1
            return True
        return False

    def phase_at(self, step: int) -> str | None:
        current = None
        for at, name in self.phases:
            if at > step:
                break
            current = name
        return current

    def oscillating(self) -> bool:
        if len(self.eef) < REVERSALS + 2:
            return False
        velocity = np.diff(np.asarray(self.eef), axis=0)
        for axis in velocity.T:
            moving = np.flatnonzero(np.abs(axis) > MOVING_M)
            signs = np.sign(axis[moving])
            turns = moving[1:][signs[1:] != signs[:-1]]
            if len(turns) >= REVERSALS and np.any(turns[REVERSALS - 1:] - turns[:1 - REVERSALS] <= WINDOW):
                return True
        return False

    def outcome(self, *, success: bool, steps: int, end: str, detail: str = "", final: dict | None = None) -> dict:
        """The structured outcome (plain JSON data)."""
        return {
            "success": success, "end": end, "detail": detail[:1500], "steps": steps,
            "reward": round(self.reward, 4), "progress": round(self.progress, 4),
            "phases": self.phases, "last_phase": self.phases[-1][1] if self.phases else None,
            "min_distance": None if math.isinf(self.min_distance) else round(self.min_distance, 4),
            "oscillation": self.oscillating(),
            "progress_stopped": {"step": self.stalled_at, "phase": self.phase_at(self.stalled_at)},
            "controller_seconds": round(self.controller_seconds, 3),
            "final": final or {},
        }


def describe(outcome: dict, episode: int | None = None, object_name: str = "object") -> str:
    """A few lines of text of one outcome, for the LLM and the report."""
    head = f"episode {episode}" if episode is not None else "episode"
    verdict = "SUCCESS" if outcome["success"] else f"FAILED ({outcome['end']})"
    phases = " -> ".join(f"{p}@{s}" for s, p in outcome["phases"]) or "(the controller named no phase)"
    stopped = outcome["progress_stopped"]
    lines = [f"{head}: {verdict} after {outcome['steps']} steps; reward {outcome['reward']}, "
             f"progress {outcome['progress']} (0..1)",
             f"  phases: {phases}",
             f"  min gripper-{object_name} distance {outcome['min_distance']} m; oscillation: "
             f"{'yes' if outcome['oscillation'] else 'no'}; progress stopped at step {stopped['step']} "
             f"in phase {stopped['phase']}"]
    final = outcome.get("final") or {}
    if final:
        lines.append("  at the end: " + ", ".join(f"{k} {v}" for k, v in final.items()))
    if outcome.get("detail"):
        lines.append(f"  error: {outcome['detail'][:600]}")
    return "\n".join(lines)
