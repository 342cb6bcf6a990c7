"""A training run directory (the run kind ``train`` of ``csro.runkinds``): start, resume, status, report.

The directory holds ``train.db`` and ``checkpoints/`` (``store``). ``start`` trains a new run
for ``config.steps`` steps, ``resume`` continues one from its last checkpoint (``trainer``:
every random choice is seeded from ``(seed, step)``, so it continues as the uninterrupted run
would on the same machine and threads), and both end by writing ``DIR/report.html``
(``csro.train.report.write_training_report``). Each finished step is reported to the hooks as the
event ``train_step`` with its metrics. Like every run kind, one process at a time works on a
directory (``csro.runs.locked``).
"""

from __future__ import annotations

import pathlib

from csro.runs import Hooks, locked
from csro.train.config import TrainConfig
from csro.train.report import write_training_report as report
from csro.train.store import TrainStore

STEP_EVENT = "train_step"


def start(config: TrainConfig, directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """A new training run of ``config`` in ``directory``; returns the report's path."""
    from csro.train.trainer import TrainRun  # torch is imported only when a run trains

    directory = pathlib.Path(directory)
    run = TrainRun.create(config, directory)
    with locked(directory):
        return _train(run, hooks)


def resume(directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """Continue the training run in ``directory`` (a finished one only rewrites its report)."""
    directory = pathlib.Path(directory)
    TrainStore.open(directory).close()  # no run here: a StoreError before anything is written
    with locked(directory):
        with TrainStore.open(directory) as store:
            done = store.final() is not None
        if done:
            return report(directory)
        from csro.train.trainer import TrainRun

        return _train(TrainRun.resume(directory), hooks)


def _train(run, hooks: Hooks) -> pathlib.Path:
    def on_step(metrics: dict) -> None:
        if hooks.on_event:
            hooks.on_event(metrics["step"], STEP_EVENT, metrics)

    try:
        run.run(on_step=on_step)
    finally:
        run.store.close()
    return report(run.store.directory)


def status(directory: str | pathlib.Path) -> dict:
    """Where the run stands: steps done of the configured ones, reward over steps, the summary."""
    with TrainStore.open(directory) as store:
        config = store.config()
        steps = store.steps()
        final = store.final()
        last = store.last_checkpoint()
    return {
        "task": config["task"], "algo": config["algo"], "model": config["model"],
        "step": steps[-1]["step"] if steps else None, "steps": config["steps"], "done": final is not None,
        "reward_over_steps": [s["reward_mean"] for s in steps], "checkpoint": None if last is None else last[0],
        "final": final,
    }
