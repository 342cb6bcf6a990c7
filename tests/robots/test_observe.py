"""The structured outcome of an episode (unit tests of our definitions, no simulator)."""

from __future__ import annotations

from csro.robots import Observer, describe


def feed(path, rewards=None, phases=None, max_frames=6):
    obs = Observer("cube_pos", max_frames=max_frames)
    frames = []
    for t, p in enumerate(path):
        obs.see(t, {"robot0_eef_pos": list(p), "cube_pos": [0.0, 0.0, 0.0]}, None if t == 0 else rewards[t])
        if phases and obs.phase(t, phases[t]):
            frames.append(t)
    return obs, frames


def test_a_straight_approach_does_not_oscillate_and_hunting_does():
    straight = [(0.3 - 0.01 * t, 0.0, 0.1) for t in range(30)]
    hunting = [(0.01 * (1 if (t // 3) % 2 else -1) * (t % 3), 0.0, 0.1) for t in range(30)]
    zeros = [0.0] * 30
    assert not feed(straight, zeros)[0].oscillating()
    assert feed(hunting, zeros)[0].oscillating()


def test_down_then_up_once_is_not_oscillation():
    path = [(0.0, 0.0, 0.2 - 0.01 * t) for t in range(15)] + [(0.0, 0.0, 0.06 + 0.01 * t) for t in range(15)]
    assert not feed(path, [0.0] * 30)[0].oscillating()


def test_min_distance_progress_and_where_it_stalled():
    path = [(0.1 - 0.01 * min(t, 8), 0.0, 0.0) for t in range(20)]
    rewards = [0.0] + [min(0.05 * t, 0.4) for t in range(1, 20)]
    phases = ["approach"] * 5 + ["descend"] * 10 + ["close"] * 5
    obs, frames = feed(path, rewards, phases)
    out = obs.outcome(success=False, steps=19, end="horizon")
    assert out["min_distance"] == 0.02
    assert out["progress"] == 0.4
    assert out["progress_stopped"] == {"step": 8, "phase": "descend"}
    assert out["phases"] == [[0, "approach"], [5, "descend"], [15, "close"]] and frames == [0, 5, 15]
    text = describe(out, 3, "cube")
    assert "episode 3: FAILED (horizon)" in text and "approach@0 -> descend@5 -> close@15" in text
    assert "min gripper-cube distance 0.02 m" in text and "stopped at step 8 in phase descend" in text


def test_the_frame_budget_keeps_one_for_the_end():
    phases = [f"p{t}" for t in range(10)]
    _, frames = feed([(0.0, 0.0, 0.0)] * 10, [0.0] * 10, phases, max_frames=3)
    assert frames == [0, 1]
