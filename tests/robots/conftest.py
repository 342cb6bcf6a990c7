"""Fixtures of the robot tests: one real Lift simulator shared by a module's tests."""

from __future__ import annotations


import pytest



def pytest_collection_modifyitems(items):
    """A test that starts the real simulator (``lift_host``) is left to ``make test``: the fast
    loop keeps the robots' pure logic (config, observation, exports)."""
    for item in items:
        if "lift_host" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def lift_host():
    from csro.robots import SimHost, get_task

    host = SimHost(get_task("Lift"), horizon=60, camera="agentview", width=64, height=48)
    yield host
    host.close()
