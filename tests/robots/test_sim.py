"""The simulation host: seeded resets, plain observations, key frames the right way up."""

from __future__ import annotations

import io

import matplotlib.image
import pytest

from csro.errors import ConfigError
from csro.robots import get_task


def test_unknown_task_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="unknown task 'Push'.*Lift, PickPlaceCan, Stack"):
        get_task("Push")


def test_resets_are_seeded(lift_host):
    a, b, c = lift_host.reset(3), lift_host.reset(4), lift_host.reset(3)
    assert a == c and a["cube_pos"] != b["cube_pos"]
    assert all(type(v) is list and all(type(x) is float for x in v) for v in a.values())
    assert not any(k.endswith("_image") for k in a)


def test_a_frame_is_a_png_the_right_way_up(lift_host):
    lift_host.reset(0)
    data = lift_host.frame()
    assert data.startswith(b"\x89PNG")
    image = matplotlib.image.imread(io.BytesIO(data), format="png")
    assert image.shape[:2] == (48, 64) and image.std() > 0.05
    # agentview looks down at the table from the front: the bright table top fills the bottom
    # rows and the darker room the top ones (an image left in OpenGL's row order is the reverse)
    rows = image[..., :3].mean(axis=(1, 2))
    assert rows[-8:].mean() > rows[:5].mean() + 0.3
