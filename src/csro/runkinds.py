"""The run-kind registry: one way to start, resume, inspect and report every kind of run.

csro has five applications that keep a run directory: the CSRO loop (``csro.runs``), the
discovery of CFR hooks and meta-solvers (``csro.discover``), Act–Observe–Rewrite robot
controllers (``csro.robots``), SRPO training (``csro.train``) and the paper's reproduction
grid of CSRO runs (``csro.reproduce``; its record is ``grid.json``, its report the summary).
Each is a ``RunKind``: the store file of its directory, its configuration model, and the
module that implements

- ``start(config, directory, hooks) -> report path`` (a new run),
- ``resume(directory, hooks) -> report path`` (an interrupted run ends where an
  uninterrupted one would; a finished run only rewrites its report),
- ``status(directory) -> dict`` (the ``csro status --json`` object, without ``kind``),
- ``report(directory) -> report path`` (rewrite ``DIR/report.html`` from the store).

A configuration names its kind (``kind: discover``; absent means ``csro``) and the run's store
keeps it in the stored configuration, so ``csro resume / status / report DIR`` read the kind
back instead of guessing it. Runs made before kinds were recorded are recognised in one place,
``_legacy_kind``. The registry is ours (the papers have no such layer); the modules are
imported only when their kind is used (training needs torch, AOR robosuite).
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
from typing import Any, Callable, Sequence

from csro.config import RunRoot, apply_overrides, parse_model, read_yaml
from csro.errors import ConfigError
from csro._sqlite import StoreError
from csro.runs import Hooks, locked
from csro.runs import change_budget as change_run_budget

DEFAULT_KIND = "csro"


@dataclasses.dataclass(frozen=True)
class RunKind:
    """One kind of run directory.

    Attributes:
      name: the ``kind`` of its configuration.
      db_name: its store's file in the run directory.
      store: ``module:Class`` of the store (a ``csro._sqlite.SQLiteStore``).
      config: ``module:Class`` of its configuration root (a ``csro.config.RunRoot``).
      module: the module with ``start``, ``resume``, ``status`` and ``report``.
      about: one line for ``csro run --help`` and the docs.
    """

    name: str
    db_name: str
    store: str
    config: str
    module: str
    about: str

    def config_model(self) -> type[RunRoot]:
        return _load(self.config)

    def store_class(self):
        return _load(self.store)

    def function(self, name: str) -> Callable:
        return getattr(importlib.import_module(self.module), name)


def _load(spec: str) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


KINDS: dict[str, RunKind] = {kind.name: kind for kind in (
    RunKind("csro", "run.db", "csro.store:RunStore", "csro.config:RunConfig", "csro.runs",
            "the CSRO loop: PSRO with an LLM writing best responses as code"),
    RunKind("discover", "run.db", "csro.store:RunStore", "csro.discover:DiscoverConfig", "csro.discover",
            "evolve CFR hooks or a PSRO meta-solver, compared with the library"),
    RunKind("aor", "aor.db", "csro.robots:AorStore", "csro.robots:AorConfig", "csro.robots",
            "Act-Observe-Rewrite: LLM-written robot controllers on robosuite"),
    RunKind("train", "train.db", "csro.train.store:TrainStore", "csro.train.config:TrainConfig", "csro.train.runs",
            "SRPO training of the oracle's LLM team"),
    RunKind("reproduce", "grid.json", "csro.reproduce:GridStore", "csro.reproduce:GridConfig", "csro.reproduce",
            "the paper's oracle x seed grid of CSRO runs and its summary table"),
)}


def kind_named(name: Any) -> RunKind:
    """The kind called ``name``; ConfigError naming the known ones otherwise."""
    if not isinstance(name, str) or name not in KINDS:
        raise ConfigError(f"config field kind: unknown kind of run {name!r}; known: {', '.join(KINDS)}")
    return KINDS[name]


def parse(data: Any) -> RunRoot:
    """A configuration mapping validated by the model of the kind it names (default ``csro``)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config must be a mapping of fields, got {type(data).__name__}")
    return parse_model(kind_named(data.get("kind", DEFAULT_KIND)).config_model(), data)


def load(path: str | pathlib.Path | None, overrides: Sequence[str] = ()) -> RunRoot:
    """A YAML configuration (None: the defaults), ``--set`` overrides applied, validated by its kind."""
    return parse(read_yaml(path, overrides) if path is not None else apply_overrides({}, overrides))


def kind_of(directory: str | pathlib.Path) -> RunKind:
    """The kind recorded in the run directory's store."""
    directory = pathlib.Path(directory)
    for db_name in dict.fromkeys(k.db_name for k in KINDS.values()):
        if (directory / db_name).is_file():
            kind = next(k for k in KINDS.values() if k.db_name == db_name)
            with kind.store_class().open(directory) as store:
                config = store.config()
            return kind_named(config["kind"] if "kind" in config else _legacy_kind(db_name, config))
    stores = ", ".join(dict.fromkeys(k.db_name for k in KINDS.values()))
    raise StoreError(f"no run at {directory} (none of {stores} found)")


def _legacy_kind(db_name: str, config: dict) -> str:
    """The kind of a run made before configurations recorded it (main before the registry).

    Then the store file told AOR (``aor.db``) and training (``train.db``) runs apart, and in a
    ``run.db`` a discovery run's configuration was ``{"discover": {...}}``; any other was CSRO.
    """
    if db_name != "run.db":
        return next(k.name for k in KINDS.values() if k.db_name == db_name)
    return "discover" if "discover" in config else "csro"


def start(config: RunRoot, directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """A new run of ``config`` (of the kind it names) in ``directory``; returns the report's path."""
    return kind_named(config.kind).function("start")(config, directory, hooks)


def resume(directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """Continue the run in ``directory``, whatever its kind; returns the report's path."""
    return kind_of(directory).function("resume")(directory, hooks)


def status(directory: str | pathlib.Path) -> dict:
    """Where the run stands: ``{"kind": ..., **the kind's status}``."""
    kind = kind_of(directory)
    return {"kind": kind.name, **kind.function("status")(directory)}


def report(directory: str | pathlib.Path) -> pathlib.Path:
    """Rewrite ``DIR/report.html`` from the run's store; returns its path."""
    return kind_of(directory).function("report")(directory)


def change_budget(directory: str | pathlib.Path, overrides: Sequence[str]) -> None:
    """``csro resume --set llm.budget...`` (or the retry settings, ``csro.runs.RESUME_FIELDS``):
    recorded in the run's store, under its lock (kinds whose configuration has an ``llm``
    section: CSRO, discovery, AOR)."""
    kind = kind_of(directory)
    if kind.name == "train":
        raise ConfigError("--set: a training run has no LLM budget to change")
    if kind.name == "reproduce":
        raise ConfigError("--set: a grid's LLM budget is each cell's; resume the cell (DIR/cells/NAME) with --set")
    with kind.store_class().open(directory) as store, locked(pathlib.Path(directory)):
        change_run_budget(store, overrides)
