"""The run-kind registry (``csro.runkinds``): configurations name their kind, run directories record it."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from csro import runkinds
from csro.cli.run import VIEWS
from csro.config import RunConfig, RunRoot
from csro.errors import ConfigError
from csro.store import RunStore, StoreError

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_kind_has_its_config_root_store_and_view():
    assert set(runkinds.KINDS) == {"csro", "discover", "aor", "train", "reproduce"} == set(VIEWS)
    for name, kind in runkinds.KINDS.items():
        model = kind.config_model()
        assert issubclass(model, RunRoot) and model().kind == name
        assert kind.store_class().db_name == kind.db_name
        for function in ("start", "resume", "status", "report"):
            assert callable(kind.function(function))


def test_a_config_is_parsed_by_the_model_of_the_kind_it_names():
    assert runkinds.parse({}) == RunConfig()
    assert type(runkinds.parse({"kind": "aor", "task": "Stack"})).__name__ == "AorConfig"
    assert runkinds.parse({"kind": "train", "steps": 2}).steps == 2
    with pytest.raises(ConfigError, match=r"^config field kind: unknown kind of run 'chess'; known: csro, discover"):
        runkinds.parse({"kind": "chess"})
    with pytest.raises(ConfigError, match=r"^config field rounds: "):  # a CSRO field is not an AOR field
        runkinds.parse({"kind": "aor", "rounds": -1})
    with pytest.raises(ConfigError, match=r"^config field iterations: unknown field"):
        runkinds.parse({"kind": "aor", "iterations": 3})


@pytest.mark.parametrize("name, kind", [("demo.yaml", "csro"), ("rrps.yaml", "csro"), ("evolve.yaml", "csro"),
                                        ("discover-cfr.yaml", "discover"), ("aor-lift.yaml", "aor"),
                                        ("train-arith.yaml", "train"), ("reproduce-rrps.yaml", "csro"),
                                        ("reproduce-leduc.yaml", "csro"), ("kuhn3.yaml", "csro"),
                                        ("ipd.yaml", "csro")])
def test_the_shipped_configs_load_as_their_kind(name, kind):
    assert runkinds.load(ROOT / "configs" / name).kind == kind


def test_every_shipped_config_is_listed_above():
    assert {p.name for p in (ROOT / "configs").glob("*.yaml")} == {
        "demo.yaml", "rrps.yaml", "evolve.yaml", "discover-cfr.yaml", "aor-lift.yaml", "train-arith.yaml",
        "reproduce-rrps.yaml", "reproduce-leduc.yaml", "kuhn3.yaml", "ipd.yaml"}


def test_the_stored_config_records_the_kind_and_it_is_read_back(tmp_path):
    config = runkinds.load(None, ["kind=discover", "target=psro"])
    assert config.to_dict()["kind"] == "discover"
    with RunStore.create(tmp_path / "d", config.to_dict()):
        pass
    assert runkinds.kind_of(tmp_path / "d").name == "discover"
    with RunStore.create(tmp_path / "c", RunConfig().to_dict()) as store:
        assert store.config()["kind"] == "csro"
    assert runkinds.kind_of(tmp_path / "c").name == "csro"
    with pytest.raises(StoreError, match=r"^no run at .* \(none of run\.db, aor\.db, train\.db, grid\.json found\)"):
        runkinds.kind_of(tmp_path)


def test_the_cli_does_not_guess_kinds():
    """cli/run.py dispatches through the registry: no store file names, no config sniffing."""
    text = (ROOT / "src" / "csro" / "cli" / "run.py").read_text()
    for guess in ("aor.db", "train.db", "run.db", "is_discovery", '"discover" in'):
        assert guess not in text


def test_a_yaml_file_of_another_kind_round_trips(tmp_path):
    path = tmp_path / "aor.yaml"
    path.write_text(yaml.safe_dump(runkinds.load(ROOT / "configs" / "aor-lift.yaml").to_dict()))
    assert runkinds.load(path) == runkinds.load(ROOT / "configs" / "aor-lift.yaml")
