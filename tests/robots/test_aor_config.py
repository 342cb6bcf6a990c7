"""The AOR configuration: defaults, and one line naming the field for bad input."""

import pathlib

import pytest

from csro.errors import ConfigError
from csro.robots import load_aor_config, parse_aor_config


def test_defaults_and_the_shipped_config():
    config = parse_aor_config(None)
    assert (config.task, config.llm.provider, config.camera.name) == ("Lift", "embedded", "agentview")
    shipped = load_aor_config(pathlib.Path(__file__).parents[2] / "configs" / "aor-lift.yaml", ["rounds=1"])
    assert shipped.rounds == 1 and shipped.llm.model == "qwen2.5-coder-0.5b" and shipped.images == "auto"


@pytest.mark.parametrize("data, message", [
    ({"episodes": 0}, "config field episodes: Input should be greater than or equal to 1"),
    ({"limits": {"step_second": 1}}, "config field limits.step_second: unknown field"),
    ({"images": "maybe"}, "config field images: Input should be 'auto', 'on' or 'off'"),
    ([1, 2], "config must be a mapping of fields, got list"),
])
def test_bad_values_name_the_field(data, message):
    with pytest.raises(ConfigError) as info:
        parse_aor_config(data)
    assert str(info.value) == message


def test_a_missing_or_broken_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_aor_config(tmp_path / "none.yaml")
    (tmp_path / "bad.yaml").write_text("task: [Lift\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_aor_config(tmp_path / "bad.yaml")
