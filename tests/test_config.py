"""Run configuration: YAML to validated models, one-line errors naming the field, overrides."""

import pathlib

import pytest
import yaml

from csro.config import RunConfig, apply_overrides, documented_yaml, load_config, parse_config
from csro.errors import ConfigError

ISSUE_EXAMPLE = """
game: rrps
iterations: 20
seed: 0
initial_policy: builtin:random
matches_per_cell: 4
meta_solver: nash
oracle:
  kind: linear_refinement
  max_refinements: 10
  context: {opponents: code, filter: top_k, k: 5, min_support: 0.05}
llm:
  provider: embedded
  model: qwen2.5-coder-0.5b
  path: null
  temperature: 0.8
  concurrency: 2
evaluation: {population: default, matches_per_opponent: 10}
"""


def test_the_documented_shape_parses_and_round_trips(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(ISSUE_EXAMPLE)
    cfg = load_config(path)
    assert cfg.iterations == 20 and cfg.oracle.max_refinements == 10 and cfg.oracle.context.k == 5
    assert cfg.llm.provider == "embedded" and cfg.evaluation.population == "default"
    assert parse_config(yaml.safe_load(cfg.to_yaml())) == cfg
    assert parse_config({}) == RunConfig()


@pytest.mark.parametrize("data, field", [
    ({"oracle": {"kind": "telepathy"}}, "oracle.kind"),
    ({"oracle": {"max_refinements": -1}}, "oracle.max_refinements"),
    ({"oracle": {"context": {"filter": "best"}}}, "oracle.context.filter"),
    ({"llm": {"provider": "skynet"}}, "llm.provider"),
    ({"llm": {"concurrency": 0}}, "llm.concurrency"),
    ({"llm": {"path": "  "}}, "llm.path"),
    ({"iterations": "many"}, "iterations"),
    ({"meta_solver": "oracle-of-delphi"}, "meta_solver"),
    ({"game": " "}, "game"),
    ({"evaluation": {"matches_per_opponent": 0}}, "evaluation.matches_per_opponent"),
    ({"execution": {"backend": "slurm"}}, "execution.backend"),
    ({"oracel": {}}, "oracel"),
])
def test_a_bad_value_names_its_field(data, field):
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    message = str(info.value)
    assert message.startswith(f"config field {field}:") and "\n" not in message


def test_unknown_fields_are_errors_not_silent_defaults():
    with pytest.raises(ConfigError, match="config field oracle.max_refinement: unknown field"):
        parse_config({"oracle": {"max_refinement": 3}})


def test_overrides_parse_values_as_yaml_and_do_not_touch_the_input():
    data = {"oracle": {"kind": "zero_shot"}}
    out = apply_overrides(data, ["oracle.max_refinements=3", "llm.provider=files", "evaluation.population=[a, b]"])
    assert out["oracle"] == {"kind": "zero_shot", "max_refinements": 3}
    assert out["evaluation"]["population"] == ["a", "b"] and data == {"oracle": {"kind": "zero_shot"}}
    with pytest.raises(ConfigError, match="expects key.path=value"):
        apply_overrides({}, ["iterations"])
    with pytest.raises(ConfigError, match="'game' is not a section"):
        apply_overrides({"game": "rrps"}, ["game.name=x"])


def test_the_sandbox_section_gives_the_workers_its_limits():
    config = parse_config(apply_overrides({}, ["sandbox.isolate_matches=true", "sandbox.memory_mb=512"]))
    limits = config.sandbox.limits()
    assert limits.isolate_matches and limits.memory_mb == 512
    assert not RunConfig().sandbox.limits().isolate_matches


def test_unreadable_and_non_mapping_files(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("oracle: {kind: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config(bad)
    listing = tmp_path / "list.yaml"
    listing.write_text("- game\n- rrps\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(listing)


@pytest.mark.parametrize("name", ["demo.yaml", "rrps.yaml"])
def test_the_shipped_configs_parse(name):
    path = pathlib.Path(__file__).resolve().parents[1] / "configs" / name
    config = load_config(path)
    assert config.game == "rrps" and config.llm.provider == "embedded"


def test_docs_config_shows_the_defaults_as_documented_yaml():
    text = documented_yaml()
    assert parse_config(yaml.safe_load(text)) == RunConfig()
    docs = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "config.md").read_text()
    assert f"```yaml\n{text}```" in docs, "docs/config.md is stale: regenerate it from `csro config`"
