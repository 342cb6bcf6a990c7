"""Act: episodes of one controller in the simulator, and their summary (``csro robot-eval``).

The fast loop of AOR (Kumar, arXiv 2603.04466): every control step the simulator's plain
observation goes to the sandboxed controller and its clamped action comes back. An episode
ends at success, at the horizon, or at the controller's first failure (exception, timeout,
malformed or non-finite action, a forbidden operation, its episode time limit), with that
reason as the outcome's ``end``; the simulator is never touched by the controller.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Callable, Sequence

import numpy as np

from ._config import ControllerLimits
from ._controller import ControllerProcess
from ._observe import Observer
from ._sim import SimHost
from ._store import Frame


@dataclasses.dataclass(frozen=True)
class Episode:
    """One episode's structured outcome (plain data) and its key frames."""

    seed: int
    outcome: dict
    frames: list[Frame]


def run_episode(host: SimHost, controller: ControllerProcess, seed: int, *, horizon: int, frames: bool = False,
                max_frames: int = 6, stop_on_success: bool = True) -> Episode:
    """Reset to ``seed`` and run ``controller`` for at most ``horizon`` steps."""
    obs = host.reset(seed)
    observer = Observer(host.task.object_key, max_frames)
    observer.see(0, obs, None)
    shots: list[Frame] = []
    end, detail, success, steps = "horizon", "", False, 0
    failure = controller.reset()
    if failure is not None:
        end, detail = failure.reason.value, failure.detail
    else:
        for step in range(horizon):
            act = controller.act(obs)
            observer.controller_seconds += act.seconds
            if observer.phase(step, act.phase) and frames:
                shots.append(Frame(step, f"phase {act.phase}", host.frame()))
            if act.end is not None:
                end, detail = act.end, act.detail
                break
            obs, reward, success = host.step(act.action)
            steps = step + 1
            observer.see(steps, obs, reward)
            if success and stop_on_success:
                end = "success"
                break
        else:
            end = "success" if success else "horizon"
    if frames:
        shots.append(Frame(steps, f"end: {end}", host.frame()))
    final = {key: [round(v, 3) for v in obs[key]] for key in ("robot0_eef_pos", host.task.object_key) if key in obs}
    return Episode(seed, observer.outcome(success=success, steps=steps, end=end, detail=detail, final=final), shots)


def evaluate(host: SimHost, source: str, seeds: Sequence[int], *, horizon: int, limits: ControllerLimits = ControllerLimits(),
             frames_for: int = 0, max_frames: int = 6, done: dict[int, dict] | None = None,
             on_episode: Callable[[int, Episode], None] | None = None, worker_seed: int = 0) -> list[dict]:
    """The outcomes of ``source`` over ``seeds`` (episode ``i`` uses ``seeds[i]``).

    Episodes already in ``done`` (index -> outcome, e.g. from the store) are not run again.
    A worker that died (timeout, crash) is replaced by a fresh one for the next episode.
    ``on_episode`` gets each new episode as soon as it ends (the loop stores it there).
    """
    outcomes: list[dict] = []
    controller: ControllerProcess | None = None
    try:
        for i, seed in enumerate(seeds):
            if done and i in done:
                outcomes.append(done[i])
                continue
            if controller is None or controller.worker.dead_reason is not None:
                if controller is not None:
                    controller.close()
                controller = ControllerProcess(source, limits, seed=worker_seed + i, dim=host.action_dim)
            episode = run_episode(host, controller, seed, horizon=horizon, frames=i < frames_for, max_frames=max_frames)
            outcomes.append(episode.outcome)
            if on_episode is not None:
                on_episode(i, episode)
    finally:
        if controller is not None:
            controller.close()
    return outcomes


def summary(task: str, outcomes: Sequence[dict]) -> dict:
    """``{"task", "episodes", "success_rate", "mean_steps", "failures": {reason: count}}``."""
    n = len(outcomes)
    failures = collections.Counter(o["end"] for o in outcomes if not o["success"])
    return {"task": task, "episodes": n,
            "success_rate": sum(o["success"] for o in outcomes) / n if n else 0.0,
            "mean_steps": float(np.mean([o["steps"] for o in outcomes])) if n else 0.0,
            "failures": dict(sorted(failures.items()))}
