"""``csro reproduce rrps|leduc``: the paper's grid of oracle × seed runs and its summary table;
and how a grid is shown by ``csro run / resume / status`` (its ``View``: a grid is a run kind)."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from csro import events
from csro.cli import loop
from csro.cli._app import app
from csro.cli._progress import run_hooks
from csro.cli._views import View

out = Console(width=None if sys.stdout.isatty() else 200)


def event_line(step: int, kind: str, data: dict, total: int | None) -> str | None:
    """A cell's progress, and its own run's lines as a CSRO run shows them."""
    if kind == events.GRID_CELL:
        if data["what"] == "next":
            eta = "time left unknown yet" if data["eta_s"] is None else f"about {_duration(data['eta_s'])} left"
            return f"[bold]grid[/bold]: {data['done']} cells done, {data['left']} left, {eta}; next {data['cell']}"
        return f"[bold]cell {data['cell']}[/bold]: {data['what']}"
    return loop.event_line(step, kind, data, total)


def _duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``3.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def closing(directory: pathlib.Path, report: pathlib.Path, s: dict) -> None:
    """The summary table (ours, the references measured here, the paper's rows) and its files."""
    from csro.reproduce import paired_rows, table_rows

    summary = json.loads((directory / "summary.json").read_text())
    header, rows = table_rows(summary)
    table = Table(*header, title=f"csro reproduce {summary['game']}: {summary['model']}, K = {summary['iterations']}")
    for row in rows:
        table.add_row(*row)
    out.print(table)
    header, rows = paired_rows(summary)
    if rows:
        table = Table(*header, title="paired by seed: model row − no-model row (mean ± 95% CI)")
        for row in rows:
            table.add_row(*row)
        out.print(table)
    for note in summary.get("notes", []):
        out.print(f"note: {note}", highlight=False)
    for name in ("summary.md", "summary.csv", "summary.html"):
        out.print(f"{name}: {directory / name}")


def status_text(directory: pathlib.Path, s: dict) -> None:
    table = Table("cell", "iterations done", "finished", title=f"{directory}: reproduce {s['game']} (K = {s['iterations']})")
    for name, cell in s["cells"].items():
        table.add_row(name, "-" if cell["iteration"] is None else str(cell["iteration"]), "yes" if cell["done"] else "no")
    out.print(table)
    out.print(f"{directory}: " + ("done" if s["done"] else "unfinished (continue with `csro resume DIR`)"))


VIEW = View(event_line=event_line, closing=closing, status=status_text,
            total=lambda s: (s.get("base") or s)["iterations"])  # a grid's configuration keeps K in its base


@app.command("reproduce")
def reproduce_cmd(
    game: str = typer.Argument(..., help="The experiment: rrps or leduc."),
    out_dir: pathlib.Path = typer.Option(..., "--out", "-o", help="The grid's directory (cells/, summary.*); "
                                                                 "run again to continue it."),
    oracles: str = typer.Option("zero_shot,linear_refinement", "--oracles",
                                help="Comma-separated oracle kinds, one row each."),
    seeds: int = typer.Option(3, "--seeds", help="Seeds per oracle (--first-seed, the next, ...)."),
    first_seed: int = typer.Option(0, "--first-seed", help="The first seed, e.g. 3 for new draws beside a "
                                                           "grid of 3 seeds."),
    baseline: bool = typer.Option(True, "--baseline/--no-baseline",
                                  help="Add the no-model row (the game's example policy, no LLM call) with the "
                                       "same seeds."),
    frame: bool = typer.Option(True, "--frame/--no-frame",
                               help="Add the grammar-without-model row (grammar_search: evolve's search with every "
                                    "rewrite drawn from the game's grammar, no LLM call) with the same seeds, where "
                                    "the game has a strict policy grammar."),
    config: Optional[pathlib.Path] = typer.Option(None, "--config", "-c", help="Base run configuration "
                                                  "(default: configs/reproduce-GAME.yaml)."),
    overrides: List[str] = typer.Option([], "--set", help="Override a base field: key.path=value (repeatable), "
                                                         "e.g. llm.provider=openai."),
) -> None:
    """Reproduce the paper's table: every oracle with every seed, beside the paper's rows and reference bots."""
    from csro import runkinds
    from csro.reproduce import grid_config, make_grid

    grid = grid_config(game, config=config, oracles=[o.strip() for o in oracles.split(",") if o.strip()],
                       seeds=seeds, overrides=overrides, baseline=baseline,
                       first_seed=first_seed, frame=frame)
    make_grid(grid)  # an unknown oracle is refused before anything is written
    with run_hooks(VIEW, grid.base.iterations) as hooks:
        report = runkinds.start(grid, out_dir, hooks)
    closing(out_dir, report, {})
