"""``csro reproduce rrps|leduc``: the paper's grid of oracle × seed runs and its summary table."""

from __future__ import annotations

import pathlib
import sys
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from csro.cli._app import app
from csro.cli.run import VIEWS, _hooks

out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


@app.command("reproduce")
def reproduce_cmd(
    game: str = typer.Argument(..., help="The experiment: rrps or leduc."),
    out_dir: pathlib.Path = typer.Option(..., "--out", "-o", help="The grid's directory (cells/, summary.*); "
                                                                 "run again to continue it."),
    oracles: str = typer.Option("zero_shot,linear_refinement", "--oracles",
                                help="Comma-separated oracle kinds, one row each."),
    seeds: int = typer.Option(3, "--seeds", help="Seeds per oracle (0, 1, ...)."),
    config: Optional[pathlib.Path] = typer.Option(None, "--config", "-c", help="Base run configuration "
                                                  "(default: configs/reproduce-GAME.yaml)."),
    overrides: List[str] = typer.Option([], "--set", help="Override a base field: key.path=value (repeatable), "
                                                         "e.g. llm.provider=openai."),
) -> None:
    """Reproduce the paper's table: every oracle with every seed, beside the paper's rows and reference bots."""
    from csro import reproduce

    grid = reproduce.make_grid(game, config=config, oracles=[o.strip() for o in oracles.split(",") if o.strip()],
                               seeds=seeds, overrides=overrides)
    view = VIEWS["csro"]
    with _hooks(view, grid.base["iterations"]) as hooks:
        summary = reproduce.run_grid(grid, out_dir, hooks=hooks,
                                     on_cell=lambda name, what: err.print(f"[bold]cell {name}[/bold]: {what}", highlight=False))
    header, rows = reproduce.table_rows(summary)
    table = Table(*header, title=f"csro reproduce {game}: {summary['model']}, K = {summary['iterations']}")
    for row in rows:
        table.add_row(*row)
    out.print(table)
    for name in ("summary.md", "summary.csv", "summary.html"):
        out.print(f"{name}: {out_dir / name}")
