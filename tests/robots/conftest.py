"""Fixtures of the robot tests: one real Lift simulator shared by a module's tests."""

from __future__ import annotations


import pytest



@pytest.fixture(scope="module")
def lift_host():
    from csro.robots import SimHost, get_task

    host = SimHost(get_task("Lift"), horizon=60, camera="agentview", width=64, height=48)
    yield host
    host.close()
