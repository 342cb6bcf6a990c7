"""Containment of the controller: it runs in the sandbox, sees only plain observations, and
every way of misbehaving ends the episode with its reason (real simulator, real sandbox)."""

from __future__ import annotations

import math

import pytest

from csro.robots import ControllerLimits, ControllerProcess, check_action, run_episode

FAST = ControllerLimits(step_seconds=1.0, episode_seconds=5.0, start_seconds=20.0)


def episode(host, source, limits=FAST, horizon=8, frames=False):
    with ControllerProcess(source, limits) as controller:
        return run_episode(host, controller, 0, horizon=horizon, frames=frames)


def controller(body: str, head: str = "") -> str:
    return f"{head}\nclass Controller:\n    def reset(self):\n        self.phase = 'start'\n\n" \
           f"    def get_action(self, obs):\n" + "".join(f"        {line}\n" for line in body.splitlines())


def test_check_action_clamps_and_refuses_what_is_not_an_action():
    assert check_action([2, -3, 0.5, 0, 0, 0, 1.0]) == ([1.0, -1.0, 0.5, 0.0, 0.0, 0.0, 1.0], "")
    for bad in ([0.0] * 6, "open", [0.0] * 6 + [math.nan], [0.0] * 6 + [math.inf], [True] + [0.0] * 6,
                [[0.0]] * 7, None):
        action, why = check_action(bad)
        assert action is None and why


def test_the_controller_gets_plain_data_only(lift_host):
    source = controller("assert type(obs) is dict and all(type(v) is list and all(type(x) is float for x in v)"
                        " for v in obs.values()), obs\nself.phase = 'checked'\nreturn [0.0] * 7")
    outcome = episode(lift_host, source).outcome
    assert outcome["end"] == "horizon" and outcome["steps"] == 8, outcome
    assert outcome["phases"] == [[0, "checked"]]


def test_a_controller_that_builds_its_own_simulator_cannot_move_the_real_cube(lift_host):
    start_z = lift_host.reset(0)["cube_pos"][2]
    cheat = controller(
        "try:\n    import mujoco\n    import robosuite\n    env = robosuite.make('Lift', robots='Panda', "
        "has_renderer=False, has_offscreen_renderer=False, use_camera_obs=False)\n"
        "    env.reset()\n    env.sim.data.qpos[env.sim.model.get_joint_qpos_addr(env.cube.joints[0])][2] = 2.0\n"
        "    env.sim.forward()\n    self.phase = 'moved my own cube'\nexcept BaseException as e:\n"
        "    self.phase = 'refused: ' + type(e).__name__\nreturn [0.0] * 7")
    outcome = episode(lift_host, cheat, limits=ControllerLimits(step_seconds=30.0, episode_seconds=60.0)).outcome
    assert not outcome["success"]
    # whatever it managed inside its worker (an import refused, or a simulator of its own), the
    # host's cube did not move: the episode's last observation comes from the host's simulator
    assert outcome["final"]["cube_pos"][2] == pytest.approx(start_z, abs=0.005)
    assert outcome["end"] in ("horizon", "forbidden", "memory", "crash", "exception", "timeout"), outcome


def test_reading_the_simulator_process_is_forbidden(lift_host):
    snoop = controller("import os\nopen('/proc/%d/mem' % os.getppid(), 'rb').read(16)\nreturn [0.0] * 7")
    outcome = episode(lift_host, snoop).outcome
    assert outcome["end"] == "forbidden" and not outcome["success"], outcome


def test_a_hanging_controller_is_stopped_at_the_step_limit(lift_host):
    hang = controller("while True:\n    pass")
    limits = ControllerLimits(step_seconds=0.5, episode_seconds=5.0)
    outcome = episode(lift_host, hang, limits=limits).outcome
    # "timeout" is the step limit's end; the episode limit would have ended it "episode_timeout"
    assert outcome["end"] == "timeout" and outcome["steps"] == 0, outcome


def test_the_episode_time_limit_ends_a_slow_controller(lift_host):
    slow = controller("import time\ntime.sleep(0.15)\nreturn [0.0] * 7")
    limits = ControllerLimits(step_seconds=1.0, episode_seconds=0.5)
    outcome = episode(lift_host, slow, limits=limits, horizon=50).outcome
    assert outcome["end"] == "episode_timeout" and 1 <= outcome["steps"] < 10, outcome


@pytest.mark.parametrize("body, end", [
    ("return 'up'", "bad_action"),
    ("return [float('nan')] * 7", "malformed"),  # the worker refuses to send a non-finite float
    ("return [0.0] * 3", "bad_action"),
    ("import numpy as np\nreturn np.zeros(7)", "malformed"),
    ("raise RuntimeError('lost the cube')", "exception"),
])
def test_garbage_actions_end_the_episode_with_the_reason(lift_host, body, end):
    outcome = episode(lift_host, controller(body)).outcome
    assert outcome["end"] == end and outcome["steps"] == 0 and not outcome["success"], outcome
    assert outcome["detail"]


def test_a_class_that_does_not_compile_is_refused_at_start(lift_host):
    outcome = episode(lift_host, "class Controller(:\n    pass\n").outcome
    assert outcome["end"] == "compile_error" and outcome["steps"] == 0


def test_out_of_range_actions_are_clamped_not_fatal(lift_host):
    outcome = episode(lift_host, controller("return [50.0, 0.0, 0.0, 0.0, 0.0, 0.0, -9.0]"), horizon=5).outcome
    assert outcome["end"] == "horizon" and outcome["steps"] == 5
