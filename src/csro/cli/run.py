"""``csro run``, ``csro resume``, ``csro status`` and ``csro report``: every kind of run, and ``csro config``.

The commands dispatch through the run-kind registry (``csro.runkinds``): ``run`` starts the kind
its configuration names, the others read the kind recorded in the run directory. How each kind
is shown is its ``View`` (``VIEWS``, one from each kind's CLI module; the CSRO loop's is
``csro.cli.loop``). The registry and the stores are imported by the commands that use them,
so ``csro --help`` loads none of them.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
from typing import Iterator, List, Optional

import typer

from csro.cli import aor, discover, loop, reproduce, train
from csro.cli._app import app
from csro.cli._progress import run_hooks
from csro.errors import ConfigError, RunStopped
from csro.text import untrusted

VIEWS = {"csro": loop.VIEW, "discover": discover.VIEW, "aor": aor.VIEW, "train": train.VIEW, "reproduce": reproduce.VIEW}


@app.command("run")
def run_cmd(
    config: pathlib.Path = typer.Argument(..., help="The run's YAML configuration; its kind field names the kind "
                                                   "of run: csro (the default), discover, aor or train."),
    out_dir: Optional[pathlib.Path] = typer.Option(None, "--out", "-o",
                                                   help="The new run directory (its store and report.html)."),
    overrides: List[str] = typer.Option([], "--set", help="Override a field: key.path=value (repeatable)."),
    estimate: bool = typer.Option(False, "--estimate", help="CSRO runs: print the tokens and money the run would "
                                  "spend (low/expected/high); make no call and write nothing."),
) -> None:
    """Start a run of any kind (CSRO, discovery, AOR, training); resumable with `csro resume`.
    Exit 3: stopped by llm.budget (continue with `csro resume DIR --set llm.budget...`); exit 4:
    stopped because the LLM provider could not answer (continue with `csro resume DIR`)."""
    from csro import runkinds

    cfg = runkinds.load(config, overrides)
    if estimate:
        if cfg.kind != "csro":
            raise ConfigError(f"--estimate: estimates are made for CSRO runs, not kind {cfg.kind!r}")
        from csro.cost import estimate_run
        from csro.llm.estimate import format_estimate

        print(format_estimate(estimate_run(cfg)), end="")
        return
    if out_dir is None:
        raise ConfigError("--out: csro run needs the new run directory (or --estimate)")
    view = VIEWS[cfg.kind]
    with run_hooks(view, view.total(cfg.model_dump())) as hooks, _stopped(out_dir):
        report = runkinds.start(cfg, out_dir, hooks)
    view.closing(out_dir, report, untrusted(runkinds.status(out_dir), markup=True))


@app.command("resume")
def resume_cmd(
    directory: pathlib.Path = typer.Argument(..., help="The run directory."),
    overrides: List[str] = typer.Option([], "--set", help="Change the budget or the waiting for a flaky "
                                        "provider first: llm.budget.FIELD=value, llm.retry_budget_s, llm.retries, "
                                        "llm.backoff_s (repeatable; no other field may change)."),
) -> None:
    """Continue an interrupted run of any kind to the result an uninterrupted run would have.
    Exit 3: stopped by llm.budget again; exit 4: stopped by the LLM provider again."""
    from csro import runkinds

    if overrides:
        runkinds.change_budget(directory, overrides)
    s = runkinds.status(directory)
    view = VIEWS[s["kind"]]
    with run_hooks(view, view.total(s)) as hooks, _stopped(directory):
        report = runkinds.resume(directory, hooks)
    view.closing(directory, report, untrusted(runkinds.status(directory), markup=True))


@contextlib.contextmanager
def _stopped(directory: pathlib.Path) -> Iterator[None]:
    """A run stopped by its LLM budget or provider: the exception learns the directory, so the
    message (and exit 3 or 4, in ``csro.cli.main``) can say how to continue it."""
    try:
        yield
    except RunStopped as exc:
        exc.directory = directory
        raise


@app.command("status")
def status_cmd(
    directory: pathlib.Path = typer.Argument(..., help="The run directory."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Where a run stands (any kind): its progress, its members or steps, its final result, its LLM use."""
    from csro import runkinds

    s = runkinds.status(directory)
    if json_out:
        print(json.dumps(untrusted(s)))
        return
    VIEWS[s["kind"]].status(directory, untrusted(s, markup=True))


@app.command("report")
def report_cmd(directory: pathlib.Path = typer.Argument(..., help="The run directory.")) -> None:
    """Write DIR/report.html from the run's store, any kind (self-contained; open it in a browser)."""
    from csro import runkinds

    print(runkinds.report(directory))


@app.command("config")
def config_cmd(
    config: Optional[pathlib.Path] = typer.Argument(None, help="A YAML configuration (default: none, the defaults)."),
    overrides: List[str] = typer.Option([], "--set", help="Override a field: key.path=value (repeatable)."),
) -> None:
    """Print the effective configuration of any kind (--set kind=aor: the AOR defaults), every field described."""
    from csro import runkinds
    from csro.config import documented_yaml

    print(documented_yaml(runkinds.load(config, overrides)), end="")
