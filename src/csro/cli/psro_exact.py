"""``csro psro-exact``: PSRO with exact best responses on an OpenSpiel game."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from csro.cli._app import app
from csro.cli._progress import progress_bar

console = Console()


@app.command("psro-exact")
def psro_exact_cmd(
    game: str = typer.Option("kuhn_poker", "--game", "-g",
                             help="An OpenSpiel game string, e.g. kuhn_poker, leduc_poker."),
    train_solver: str = typer.Option("nash", "--train-solver",
                                     help="Meta-solver for best-response targets (any of csro.solvers.meta; "
                                     "docs/meta-solvers.md)."),
    eval_solver: str = typer.Option("nash", "--eval-solver",
                                    help="Meta-solver whose mixture's NashConv is reported."),
    iterations: int = typer.Option(10, "--iterations",
                                   help="PSRO iterations (iteration 0 = the uniform policy)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Exact-oracle PSRO (Lanctot et al. 2017): NashConv of the eval mixture per iteration."""
    from csro.solvers.meta import get_meta_solver
    from csro.solvers.psro_exact import run_psro_exact

    train = get_meta_solver(train_solver)
    evaluate = get_meta_solver(eval_solver)
    with progress_bar(f"psro-exact {game}") as update:
        result = run_psro_exact(game, train_solver=train, eval_solver=evaluate,
                                iterations=iterations,
                                callback=lambda t, _: update(t + 1, iterations))
    if json_out:
        print(json.dumps({"game": game, "iterations": iterations,
                          "train_solver": train_solver, "eval_solver": eval_solver,
                          "nash_conv": result.nash_conv}))
        return
    table = Table("iteration", "population", "NashConv", "seconds",
                  title=f"psro-exact {game}: train {train_solver}, eval {eval_solver}")
    for t, (value, secs) in enumerate(zip(result.nash_conv, result.seconds)):
        table.add_row(str(t), str(t + 1), f"{value:.6f}", f"{secs:.2f}")
    console.print(table)
