"""``csro aor`` and ``csro robot-eval``: LLM-written robot controllers on robosuite (docs/aor.md).

``csro resume DIR`` and ``csro report DIR`` hand an AOR run directory (one holding ``aor.db``)
to ``resume_aor`` and ``report_aor`` here.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import List, Optional

import typer
from rich.console import Console

from csro.cli._app import app
from csro.errors import PolicyError

err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def _event(round_: int, kind: str, data: dict) -> None:
    """One stderr line per loop event."""
    if kind == "round_start":
        err.print(f"[bold]round {round_}[/bold]: " + (f"rewriting {data['parent']}" if data["parent"]
                                                       else "writing the first controller"), highlight=False)
    elif kind == "controller":
        what = "passed the smoke check" if data["valid"] else f"rejected: {' '.join(str(data['error']).split())[:140]}"
        err.print(f"  {data['id']}: {what}", highlight=False)
    elif kind == "episode":
        verdict = "success" if data["success"] else data["end"]
        err.print(f"  {data['controller']} episode {data['episode']}: {verdict} in {data['steps']} steps", highlight=False)
    elif kind == "round_done" and data.get("summary"):
        s = data["summary"]
        err.print(f"  round {round_} done: {data['controller']} success {s['success_rate']:.2f}; best "
                  f"{data['best']} ({data['best_success_rate']:.2f})", highlight=False)


def _closing(directory: pathlib.Path, report: pathlib.Path) -> None:
    from csro.robots import AorStore

    with AorStore.open(directory) as store:
        final = store.final() or {}
    print(f"best controller: {final.get('best')}  success rate {final.get('success_rate', 0.0):.2f}")
    print(f"report: {report}")


@app.command("aor")
def aor_cmd(
    task: Optional[str] = typer.Option(None, "--task", help="Lift | PickPlaceCan | Stack (overrides the config)."),
    config: Optional[pathlib.Path] = typer.Option(None, "--config", help="The run's YAML configuration."),
    out_dir: pathlib.Path = typer.Option(..., "--out", "-o", help="The new run directory (aor.db and report.html)."),
    overrides: List[str] = typer.Option([], "--set", help="Override a field: key.path=value (repeatable)."),
) -> None:
    """Act–Observe–Rewrite: an LLM rewrites a robot controller from episode outcomes; resumable."""
    from csro.robots import _runs, load_aor_config

    cfg = load_aor_config(config, list(overrides) + ([f"task={task}"] if task else []))
    report = _runs.start(cfg, out_dir, _event)
    _closing(out_dir, report)


def resume_aor(directory: pathlib.Path) -> None:
    from csro.robots import _runs

    _closing(directory, _runs.resume(directory, _event))


def report_aor(directory: pathlib.Path) -> pathlib.Path:
    from csro.robots._report import write_aor_report

    return write_aor_report(directory)


@app.command("robot-eval")
def robot_eval_cmd(
    task: str = typer.Option(..., "--task", help="Lift | PickPlaceCan | Stack."),
    controller: pathlib.Path = typer.Option(..., "--controller", help="A Python file defining class Controller."),
    episodes: int = typer.Option(20, "--episodes", min=1, help="Evaluation episodes (seeds S, S+1, ...)."),
    seed: int = typer.Option(0, "--seed", min=0, help="The first episode's seed."),
    horizon: int = typer.Option(300, "--horizon", min=1, help="Control steps per episode at most (20 Hz)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Evaluate a controller file in the real simulator (sandboxed): success rate and failures."""
    from csro.robots import SimHost, evaluate, get_task, summary

    spec = get_task(task)
    try:
        source = controller.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read controller file {controller}: {exc}") from None
    host = SimHost(spec, horizon=horizon, camera=None)
    try:
        def show(i: int, episode) -> None:
            o = episode.outcome
            err.print(f"episode {i} (seed {episode.seed}): {'success' if o['success'] else o['end']} "
                      f"in {o['steps']} steps", highlight=False)

        outcomes = evaluate(host, source, [seed + i for i in range(episodes)], horizon=horizon,
                            on_episode=None if json_out else show)
    finally:
        host.close()
    result = summary(task, outcomes)
    if json_out:
        print(json.dumps(result))
    else:
        print(f"{task}: success rate {result['success_rate']:.2f} over {episodes} episodes, mean steps "
              f"{result['mean_steps']:.1f}, failures {result['failures'] or 'none'}")
