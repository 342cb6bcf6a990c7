"""The public surface of csro.robots."""

import csro.robots


def test_exported_names():
    assert sorted(csro.robots.__all__) == sorted([
        "AorConfig", "AorStore", "ControllerLimits", "ControllerProcess", "DB_NAME", "Episode", "Observer",
        "SimError", "SimHost", "TASKS", "check_action", "describe", "evaluate", "get_task", "load_aor_config",
        "parse_aor_config", "report", "resume", "run_episode", "start", "status", "summary"])
    assert all(hasattr(csro.robots, name) for name in csro.robots.__all__)
