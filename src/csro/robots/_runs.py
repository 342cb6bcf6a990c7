"""The life of an AOR run directory: ``start``, ``resume`` (also after ``kill -9``), ``status``, ``report``.

The run kind ``aor`` of ``csro.runkinds``. The wiring is that of ``csro.runs`` (one process at
a time per directory under the same advisory lock; one LLM client that records every call in
the store and serves recorded calls from it), with the AOR store and loop in place of the CSRO ones.
"""

from __future__ import annotations

import pathlib

from csro import runs
from csro.recording import run_client

from ._config import AorConfig, parse_aor_config
from ._loop import ActObserveRewrite
from ._report import write_aor_report as report
from ._sim import SimHost, get_task
from ._store import AorStore


def start(config: AorConfig, directory: str | pathlib.Path, hooks: runs.Hooks = runs.Hooks()) -> pathlib.Path:
    """A new AOR run of ``config`` in ``directory``; returns the report's path."""
    get_task(config.task)  # refuse an unknown task before anything is written
    directory = pathlib.Path(directory)
    with AorStore.create(directory, config.to_dict()) as store, runs.locked(directory):
        return _execute(config, store, hooks)


def resume(directory: str | pathlib.Path, hooks: runs.Hooks = runs.Hooks()) -> pathlib.Path:
    """Continue the AOR run in ``directory`` (a finished one only rewrites its report)."""
    directory = pathlib.Path(directory)
    with AorStore.open(directory) as store, runs.locked(directory):
        if store.final() is not None:
            return report(directory)
        return _execute(parse_aor_config(store.config()), store, hooks)


def status(directory: str | pathlib.Path) -> dict:
    """Where the run stands: rounds done, each controller with its success rate, the best."""
    with AorStore.open(directory) as store:
        config = parse_aor_config(store.config())
        rounds = store.rounds()
        controllers = store.controllers()
        final = store.final()
        llm = store.llm_stats()
    rates = {r["controller"]: r["summary"]["success_rate"] for r in rounds if "summary" in r}
    return {
        "task": config.task, "round": rounds[-1]["round"] if rounds else None, "rounds": config.rounds,
        "done": final is not None,
        "controllers": [{"id": c.id, "round": c.round, "parent": c.parent, "valid": c.valid, "sha256": c.sha256,
                         "success_rate": rates.get(c.id)} for c in controllers],
        "best": rounds[-1]["best"] if rounds else None,
        "final": final,
        "llm": {k: llm[k] for k in ("calls", "tokens_in", "tokens_out", "errors")},
    }


def _execute(config: AorConfig, store: AorStore, hooks: runs.Hooks) -> pathlib.Path:
    task = get_task(config.task)
    cam = config.camera
    host = SimHost(task, horizon=config.horizon, camera=cam.name if cam.enabled else None, width=cam.width,
                   height=cam.height)
    try:
        with run_client(config.llm, store, on_wait=hooks.on_wait) as llm:
            ActObserveRewrite(config, task, store, llm, host, hooks.on_event).run()
    finally:
        host.close()
    return report(store.directory)
