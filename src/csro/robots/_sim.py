"""The simulation host: one robosuite task (Panda, the default OSC_POSE composite controller),
headless, with seeded resets and offscreen key frames.

The AOR paper (Kumar, arXiv 2603.04466) runs robosuite Lift, PickPlaceCan and Stack; which
robot, controller and rendering settings it used is not said. Ours, measured on a 2-core
machine without a GPU:

- MuJoCo renders through Debian's Mesa: EGL when it works, else OSMesa (``MUJOCO_GL`` is
  chosen once per process by ``gl_backend``, before mujoco is imported);
- the environment is built with a seed (robosuite draws from its generator while building
  the model, and ``hard_reset=False`` keeps that model: unseeded, episodes differed slightly
  from process to process); resets keep the compiled model (~30x faster) and are seeded by
  resetting the state of the environment's one random generator in place (the placement
  samplers and the robot hold references to that same generator object);
- frames are rendered on demand only (at the controller's phase changes and at the end, by
  the caller), with reflections and multisampling off and a frame-sized offscreen buffer
  (together ~3x faster than robosuite's defaults); ``camera_obs=True`` instead renders every
  step as robosuite's camera observation (the benchmark's "with frames" case).

The controller never runs here: ``obs`` returns the observation as a plain dict of lists,
the only thing a controller is given (see ``csro.robots._controller``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import struct
import subprocess
import sys
import zlib
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from csro.errors import ConfigError, SimError

CONTROL_HZ = 20


@dataclasses.dataclass(frozen=True)
class Task:
    """A robosuite task as the AOR loop sees it.

    Attributes:
      name: the name on the command line (``Lift``, ``PickPlaceCan``, ``Stack``).
      env_name: the robosuite environment.
      object_key: the observation key of the object to grasp (for the minimum
        gripper–object distance of an outcome).
      goal: one paragraph for the prompt: what success is and which observation keys matter.
      extra: constant facts of the task added to every observation (e.g. the target bin).
    """

    name: str
    env_name: str
    object_key: str
    goal: str
    extra: Callable[[Any], dict] | None = None


def _can_target(env: Any) -> dict:
    target = env.target_bin_placements[env.object_to_id["can"]]
    return {"target_pos": [float(v) for v in target]}


TASKS: dict[str, Task] = {
    "Lift": Task("Lift", "Lift", "cube_pos",
                 "Lift the red cube: success when the cube's centre is more than 4 cm above the table top. "
                 "Key observations: cube_pos (cube centre, m), robot0_eef_pos (between the fingertips), "
                 "gripper_to_cube_pos, robot0_gripper_qpos (finger joints; about +-0.04 open, +-0.0 closed)."),
    "PickPlaceCan": Task("PickPlaceCan", "PickPlaceCan", "Can_pos",
                         "Pick the can from the left bin and place it in its slot of the right bin: success "
                         "when the can rests inside that bin's target area. Key observations: Can_pos, "
                         "robot0_eef_pos, Can_to_robot0_eef_pos, robot0_gripper_qpos, and target_pos (the "
                         "centre of the target slot on the right bin's floor, a constant of the task).",
                         _can_target),
    "Stack": Task("Stack", "Stack", "cubeA_pos",
                  "Stack the red cube A on the green cube B: success when A rests on B, lifted off the table, "
                  "and the gripper no longer grasps it. Key observations: cubeA_pos, cubeB_pos (centres, m; "
                  "A is 4 cm wide, B 5 cm), gripper_to_cubeA, gripper_to_cubeB, cubeA_to_cubeB, robot0_eef_pos, "
                  "robot0_gripper_qpos."),
}


def get_task(name: str) -> Task:
    task = TASKS.get(name)
    if task is None:
        raise ConfigError(f"unknown task {name!r} (valid: {', '.join(TASKS)})")
    return task


_PROBE = ("import mujoco, numpy as np\n"
          "m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom size=\".1\"/></worldbody></mujoco>')\n"
          "r = mujoco.Renderer(m, 8, 8); r.update_scene(mujoco.MjData(m)); assert r.render().shape == (8, 8, 3)\n")


@lru_cache(maxsize=None)
def gl_backend() -> str:
    """The headless GL backend used for frames: ``MUJOCO_GL`` if set, else EGL if a probe
    renders with it, else OSMesa. Sets ``MUJOCO_GL`` for this process."""
    chosen = os.environ.get("MUJOCO_GL")
    if not chosen:
        chosen = "osmesa"
        for backend in ("egl", "osmesa"):
            env = {**os.environ, "MUJOCO_GL": backend, "PYOPENGL_PLATFORM": backend}
            try:
                ok = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                                    timeout=60).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
            if ok:
                chosen = backend
                break
        os.environ["MUJOCO_GL"] = chosen
    os.environ.setdefault("PYOPENGL_PLATFORM", chosen)
    return chosen


def png(rgb: np.ndarray) -> bytes:
    """An RGB uint8 image (rows top to bottom) as PNG bytes."""
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def _errors_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR


def plain(obs: dict) -> dict:
    """An observation as a plain dict of lists of floats (camera images left out)."""
    return {k: [float(x) for x in np.ravel(v)] for k, v in obs.items() if not k.endswith("_image")}


class SimHost:
    """One robosuite environment of ``task``; ``reset(seed)``, ``step(action)``, ``frame()``."""

    def __init__(self, task: Task, *, horizon: int, camera: str | None = "frontview", width: int = 160,
                 height: int = 120, camera_obs: bool = False, seed: int = 0):
        self.task, self.horizon = task, horizon
        self.camera, self.width, self.height = camera, width, height
        if camera is not None:
            gl_backend()
        # robosuite logs warnings about optional packages and a private macro file at import,
        # and its controller file at every make: keep only its errors on csro's terminal.
        logging.getLogger("robosuite_logs").addFilter(_errors_only)
        try:
            import robosuite
        except ImportError as exc:
            raise SimError(f"robosuite is not installed ({exc}): pip install 'csro[robot]'") from None
        kwargs = dict(robots="Panda", has_renderer=False, has_offscreen_renderer=camera is not None,
                      use_camera_obs=camera_obs and camera is not None, horizon=horizon, ignore_done=True,
                      hard_reset=False, reward_shaping=True, control_freq=CONTROL_HZ, seed=seed)
        if camera_obs and camera is not None:
            kwargs.update(camera_names=camera, camera_widths=width, camera_heights=height)
        try:
            self.env = robosuite.make(task.env_name, **kwargs)
        except Exception as exc:  # robosuite raises bare AssertionErrors on a bad install
            raise SimError(f"robosuite.make({task.env_name!r}) failed: {type(exc).__name__}: {exc}") from None
        self._extra = task.extra(self.env) if task.extra else {}
        self._context: Any = None
        self.action_dim = int(self.env.action_dim)

    def reset(self, seed: int) -> dict:
        """Reset to the initial state of episode seed ``seed``; the plain observation."""
        self.env.rng.bit_generator.state = np.random.default_rng(seed).bit_generator.state
        obs = self.env.reset()
        self._fast_frames()
        return self._plain(obs)

    def step(self, action: list[float]) -> tuple[dict, float, bool]:
        """One control step: (plain observation, shaped reward, success)."""
        obs, reward, _, _ = self.env.step(np.asarray(action, dtype=np.float64))
        return self._plain(obs), float(reward), bool(self.env._check_success())

    def frame(self) -> bytes | None:
        """The camera's view now, as PNG, the right way up (None without a camera)."""
        if self.camera is None:
            return None
        rgb = self.env.sim.render(width=self.width, height=self.height, camera_name=self.camera)
        return png(np.ascontiguousarray(rgb[::-1]))  # OpenGL rows run bottom to top

    def close(self) -> None:
        self.env.close()

    def _plain(self, obs: dict) -> dict:
        out = plain(obs)
        out.update(self._extra)
        return out

    def _fast_frames(self) -> None:
        """No reflections, no multisampling, a frame-sized buffer (once per compiled model)."""
        if self.camera is None:
            return
        import mujoco

        context = self.env.sim._render_context_offscreen
        if context is None or context is self._context:
            return
        context.scn.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        self.env.sim.model.vis.quality.offsamples = 0
        self.env.sim.model.vis.global_.offwidth = self.width
        self.env.sim.model.vis.global_.offheight = self.height
        context.con.free()
        context._set_mujoco_context_and_buffers()
        self._context = context
