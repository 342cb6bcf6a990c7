"""``csro robot-eval``, and how an AOR run (``kind: aor``) is shown: LLM-written robot controllers (docs/aor.md).

An AOR run is started with ``csro run CONFIG`` (``kind: aor``) and continued, inspected and
reported with ``csro resume / status / report`` (``csro.cli.run``); ``VIEW`` is how it is shown.
"""

from __future__ import annotations

import json
import pathlib
import sys

import typer
from rich.console import Console
from rich.table import Table

from csro import events
from csro.cli._app import app
from csro.cli._views import View
from csro.errors import PolicyError

out = Console(width=None if sys.stdout.isatty() else 160, emoji=False)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160, emoji=False)


def event_line(round_: int, kind: str, data: dict, total: int | None) -> str | None:
    """One terminal line for an AOR loop event (None: not shown)."""
    if kind == events.ROUND_START:
        return f"[bold]round {round_}/{total}[/bold]: " + (f"rewriting {data['parent']}" if data["parent"]
                                                           else "writing the first controller")
    if kind == events.CONTROLLER:
        what = "passed the smoke check" if data["valid"] else f"rejected: {' '.join(str(data['error']).split())[:140]}"
        return f"  {data['id']}: {what}"
    if kind == events.EPISODE:
        verdict = "success" if data["success"] else data["end"]
        return f"  {data['controller']} episode {data['episode']}: {verdict} in {data['steps']} steps"
    if kind == events.ROUND_DONE and data.get("summary"):
        s = data["summary"]
        return (f"  round {round_} done: {data['controller']} success {s['success_rate']:.2f}; best "
                f"{data['best']} ({data['best_success_rate']:.2f})")
    return None


def closing(directory: pathlib.Path, report: pathlib.Path, s: dict) -> None:
    final = s["final"] or {}
    out.print(f"best controller: {final.get('best')}  success rate {final.get('success_rate', 0.0):.2f}", highlight=False)
    out.print(f"report: {report}", highlight=False)


def status_text(directory: pathlib.Path, s: dict) -> None:
    state = "done" if s["done"] else f"round {s['round'] if s['round'] is not None else '-'} of {s['rounds']} finished"
    out.print(f"{directory}: AOR on {s['task']}, {state}; best {s['best']}", highlight=False)
    table = Table("controller", "round", "parent", "valid", "success rate", "sha256")
    for c in s["controllers"]:
        rate = "-" if c["success_rate"] is None else f"{c['success_rate']:.2f}"
        table.add_row(c["id"], str(c["round"]), c["parent"] or "-", "yes" if c["valid"] else "no", rate,
                      (c["sha256"] or "-")[:12])
    out.print(table)


VIEW = View(event_line=event_line, closing=closing, status=status_text, total=lambda s: s["rounds"])


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
