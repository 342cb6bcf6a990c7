"""Control steps per second: the sandboxed controller loop vs the same controller in-process.

The hand-written Lift controller (examples/controllers/lift.py) drives the real robosuite
Lift simulator for ``--episodes`` episodes of ``--steps`` steps each (seeds 0, 1, ...), four
ways measured side by side in this run:

- in-process: the controller class executed *in this process, unsandboxed* (our own example
  file, not LLM code), its ``get_action`` called directly with the plain observation;
- sandboxed: ``csro.robots.ControllerProcess`` — the same class in its sandboxed worker,
  one round trip a step (``get_action`` and the read of ``phase``), the action checked;

each without camera frames and with one (robosuite's camera observation, rendered every
step at ``--size`` pixels square, headless Mesa). Prints steps/s and the ratios sandboxed /
in-process (target in the AOR issue: >= 0.8). Usage: python bench/robot_steps.py
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCE = (ROOT / "examples" / "controllers" / "lift.py").read_text()


def in_process(host, episodes: int, steps: int) -> float:
    namespace: dict = {}
    exec(compile(SOURCE, "lift.py", "exec"), namespace)  # trusted example file, benchmark only
    start = time.perf_counter()
    for seed in range(episodes):
        obs = host.reset(seed)
        controller = namespace["Controller"]()
        controller.reset()
        for _ in range(steps):
            obs, _, _ = host.step(controller.get_action(obs))
    return episodes * steps / (time.perf_counter() - start)


def sandboxed(host, episodes: int, steps: int) -> float:
    from csro.robots import ControllerProcess

    with ControllerProcess(SOURCE) as controller:
        assert controller.start() is None
        start = time.perf_counter()
        for seed in range(episodes):
            obs = host.reset(seed)
            assert controller.reset() is None
            for _ in range(steps):
                act = controller.act(obs)
                assert act.end is None, act
                obs, _, _ = host.step(act.action)
        return episodes * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--size", type=int, default=84, help="camera frame width and height")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from csro.robots import SimHost, get_task

    task = get_task("Lift")
    for label, frames in (("without frames", False), ("with frames", True)):
        host = SimHost(task, horizon=args.steps, camera="agentview" if frames else None, width=args.size,
                       height=args.size, camera_obs=frames)
        try:
            in_process(host, 1, 10)  # warm up both paths once
            ref = in_process(host, args.episodes, args.steps)
            box = sandboxed(host, args.episodes, args.steps)
        finally:
            host.close()
        print(f"{label:15s} in-process {ref:7.1f} steps/s  sandboxed {box:7.1f} steps/s  ratio {box / ref:.2f}")


if __name__ == "__main__":
    main()
