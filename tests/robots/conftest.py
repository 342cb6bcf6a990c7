"""Fixtures of the robot tests: one real Lift simulator shared by a module's tests."""

from __future__ import annotations

import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "controllers"
REPLIES = pathlib.Path(__file__).resolve().parent / "replies"


@pytest.fixture(scope="module")
def lift_host():
    from csro.robots import SimHost, get_task

    host = SimHost(get_task("Lift"), horizon=60, camera="agentview", width=64, height=48)
    yield host
    host.close()
