"""``csro solve`` (one CFR run) and ``csro suite`` (every algorithm on a game set).

The commands parse flags into ``SolveConfig`` / ``SuiteConfig`` and call the library
(``csro.solvers.cfr``, ``csro.solvers.suite``); bad values raise ConfigError / GameError,
which ``csro.cli.main`` prints on one line (exit 2). Progress bars go to stderr, and only
when it is a terminal.
"""

from __future__ import annotations

import contextlib
import csv
import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from csro.cli._app import app
from csro.errors import ConfigError

_ALGOS_HELP = "cfr, cfr+, lcfr, dcfr, pcfr+, dpcfr+, hs-pcfr+, vad-cfr, aod-cfr, wop-cfr"


def _parse_ints(text: str | None, flag: str) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated integers, got {text!r}") from None


@contextlib.contextmanager
def _progress_bar(enabled: bool):
    """Yields ``(start(label, total), advance(done, total))`` callbacks (no-ops if disabled)."""
    if not enabled:
        yield (lambda label, total: None), None
        return
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True,
    )
    state = {"task": None}

    def start(label: str, total: int) -> None:
        if state["task"] is not None:
            progress.remove_task(state["task"])
        state["task"] = progress.add_task(label, total=total)

    def advance(done: int, total: int) -> None:
        if done % 10 == 0 or done == total:
            progress.update(state["task"], completed=done)

    with progress:
        yield start, advance


@app.command()
def solve(
    game: str = typer.Option(..., "--game", "-g", help="OpenSpiel game string, e.g. leduc_poker."),
    algo: str = typer.Option(..., "--algo", help=f"CFR variant: {_ALGOS_HELP}."),
    iterations: int = typer.Option(..., "--iterations", help="CFR iterations (>= 1)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    curve: Path | None = typer.Option(
        None, "--curve", help="Write exploitability at log-spaced iterations to this CSV."
    ),
) -> None:
    """Run one CFR variant on one game; print NashConv and exploitability of its average."""
    from csro.solvers.cfr import SolveConfig, log_checkpoints
    from csro.solvers.cfr import solve as run_solve

    config = SolveConfig(game, algo, iterations, log_checkpoints(iterations) if curve else ())
    with _progress_bar(sys.stderr.isatty()) as (start, advance):
        start(f"{algo} on {game}", iterations)
        result = run_solve(config, progress=advance)
    if curve is not None:
        curve.parent.mkdir(parents=True, exist_ok=True)
        with curve.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["iteration", "nash_conv", "exploitability", "seconds"])
            for p in result.curve:
                writer.writerow([p.iteration, repr(p.nash_conv), repr(p.exploitability),
                                 f"{p.seconds:.4f}"])
    if as_json:
        print(json.dumps(result.to_json()))
    else:
        Console().print(
            f"{algo} on {game}, {iterations} iterations: NashConv {result.nash_conv:.6e}, "
            f"exploitability {result.exploitability:.6e} ({result.seconds:.2f} s)"
        )


@app.command()
def suite(
    games: str = typer.Option("train", "--games", help="train, test, all, or suite game names."),
    algos: str = typer.Option(
        "cfr,cfr+,dcfr,pcfr+,vad-cfr,wop-cfr", "--algos", help="Comma-separated variants."
    ),
    iterations: int = typer.Option(1000, "--iterations", help="Iterations per run."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder for CSVs and plots."),
    checkpoints: str | None = typer.Option(
        None, "--checkpoints", help="Comma-separated iterations (default: log-spaced)."
    ),
) -> None:
    """Run every algorithm on every game of a set; write curves, plots and a ranked summary."""
    from csro.solvers.suite import SuiteConfig, resolve_games, run_suite

    config = SuiteConfig(
        games=resolve_games(games),
        algos=tuple(a.strip() for a in algos.split(",") if a.strip()),
        iterations=iterations,
        out=out,
        checkpoints=_parse_ints(checkpoints, "--checkpoints"),
    )
    with _progress_bar(sys.stderr.isatty()) as (start, advance):
        result = run_suite(
            config,
            on_start=lambda g, a: start(f"{a} on {g.name}", iterations),
            progress=advance,
        )
    console = Console(width=None if sys.stdout.isatty() else 200)  # no wrapping in logs
    console.print(summary_table(result))
    console.print(f"wrote {out / 'curves.csv'}, {out / 'summary.csv'}, {out / 'trees.csv'} "
                  "and one PNG per game")


def summary_table(result) -> Table:
    """Final exploitability and rank per game and algorithm, plus each algorithm's mean rank."""
    algos = result.config.algos
    ranks = result.ranks()
    table = Table(title=f"exploitability after {result.config.iterations} iterations (rank)")
    table.add_column("game", no_wrap=True)
    for a in algos:
        table.add_column(a, justify="right")
    for g in result.config.games:
        cells = []
        for a in algos:
            rank = ranks[g.name][a]
            text = f"{result.final(g.name, a):.2e} ({rank:g})"
            cells.append(f"[bold]{text}[/bold]" if rank == min(ranks[g.name].values()) else text)
        table.add_row(g.name, *cells)
    mean = result.mean_ranks()
    table.add_row("mean rank", *[f"{mean[a]:.2f}" for a in algos], style="italic")
    return table
