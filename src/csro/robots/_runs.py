"""The life of an AOR run directory: ``start``, ``resume`` (also after ``kill -9``), the report.

The wiring is that of ``csro.runs`` (one process at a time per directory under the same
advisory lock; one LLM client that records every call in the store and serves recorded
calls from it), with the AOR store and loop in place of the CSRO ones.
"""

from __future__ import annotations

import pathlib

from csro import runs

from ._config import AorConfig, parse_aor_config
from ._loop import ActObserveRewrite, OnEvent
from ._report import write_aor_report
from ._sim import SimHost, get_task
from ._store import DB_NAME, AorStore


def is_aor_run(directory: str | pathlib.Path) -> bool:
    """Whether ``directory`` holds an AOR run (its store is the marker)."""
    return (pathlib.Path(directory) / DB_NAME).is_file()


def start(config: AorConfig, directory: str | pathlib.Path, on_event: OnEvent | None = None) -> pathlib.Path:
    """A new AOR run of ``config`` in ``directory``; returns the report's path."""
    get_task(config.task)  # refuse an unknown task before anything is written
    directory = pathlib.Path(directory)
    with AorStore.create(directory, config.to_dict()) as store, runs.locked(directory):
        return _execute(config, store, on_event)


def resume(directory: str | pathlib.Path, on_event: OnEvent | None = None) -> pathlib.Path:
    """Continue the AOR run in ``directory`` (a finished one only rewrites its report)."""
    directory = pathlib.Path(directory)
    with AorStore.open(directory) as store, runs.locked(directory):
        if store.final() is not None:
            return write_aor_report(directory)
        return _execute(parse_aor_config(store.config()), store, on_event)


def _execute(config: AorConfig, store: AorStore, on_event: OnEvent | None) -> pathlib.Path:
    task = get_task(config.task)
    cam = config.camera
    host = SimHost(task, horizon=config.horizon, camera=cam.name if cam.enabled else None, width=cam.width,
                   height=cam.height)
    try:
        with runs.llm_client(config.llm, store) as llm:
            ActObserveRewrite(config, task, store, llm, host, on_event).run()
    finally:
        host.close()
    return write_aor_report(store.directory)
