"""The hand-written example controllers, evaluated in the real simulator through the sandbox
(the figures over 20 episodes are in docs/aor.md; here a few episodes keep the suite short)."""

from __future__ import annotations

import pytest

from aor_helpers import EXAMPLES
from csro.robots import SimHost, evaluate, get_task, summary

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.mark.parametrize("task, file, episodes, horizon", [
    ("Lift", "lift.py", 3, 100),
    ("PickPlaceCan", "pick_place_can.py", 2, 250),
    ("Stack", "stack.py", 2, 200),
])
def test_a_hand_written_controller_succeeds(task, file, episodes, horizon):
    host = SimHost(get_task(task), horizon=horizon, camera=None)
    try:
        outcomes = evaluate(host, (EXAMPLES / file).read_text(), list(range(episodes)), horizon=horizon)
    finally:
        host.close()
    result = summary(task, outcomes)
    assert result["success_rate"] == 1.0, [(o["end"], o["progress_stopped"], o["detail"]) for o in outcomes]
    assert all(o["phases"][0][1] == "approach" and len(o["phases"]) >= 4 for o in outcomes)
