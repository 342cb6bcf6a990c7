"""``csro games``, ``csro eval``, ``csro exploit`` and ``csro play``."""

from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from csro.cli._app import app
from csro.cli._progress import progress_bar
from csro.errors import ConfigError
from csro.text import untrusted

console = Console(width=None if sys.stdout.isatty() else 160, emoji=False)


@app.command("games")
def games_cmd(json_out: bool = typer.Option(False, "--json", help="Print one JSON list on stdout.")) -> None:
    """List the built-in game names with short descriptions (any OpenSpiel game string works too)."""
    from csro.games import list_games

    games = list_games()
    if json_out:
        print(json.dumps([{"name": n, "description": d} for n, d in games]))
        return
    table = Table("game", "description", title="games (any OpenSpiel game string is accepted too)")
    for name, description in games:
        table.add_row(name, description)
    console.print(table)


@app.command("eval")
def eval_cmd(
    game: str = typer.Option(..., "--game", "-g", help="rrps, leduc, or an OpenSpiel game string."),
    policy: List[str] = typer.Option(..., "--policy", "-p", help="A policy file or builtin:NAME (repeatable)."),
    opponents: Optional[str] = typer.Option(None, "--opponents", help="Comma-separated opponents, or one of the "
                                            "game's named populations, e.g. bots-heldout (default: the game's population)."),
    matches: int = typer.Option(10, "--matches", "-n", help="Matches per (policy, opponent) cell."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Run seed; the same seed gives the same returns "
                                       "(default: one drawn at random and shown, which no policy can guess)."),
    processes: Optional[int] = typer.Option(None, "--processes", help="Runner processes (default: the cores)."),
    isolate_matches: bool = typer.Option(False, "--isolate-matches", help="A worker process per match, so that no "
                                         "policy carries what it saw from one match to another (about ten times "
                                         "the CPU: docs/sandbox.md)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Evaluate policies against a population: PopReturn, PopExpl, AggScore with 95% CIs."""
    from csro.evaluation import evaluate as run_evaluation
    from csro.evaluation import resolve, unique_names
    from csro.games import load_game
    from csro.policies import SandboxLimits

    g = load_game(game)
    if matches < 1:
        raise ConfigError(f"--matches must be at least 1, got {matches}")
    specs = unique_names([resolve(p, g) for p in policy])
    if not opponents:
        opponent_refs = g.population()
    elif opponents.strip() in g.named_populations():
        opponent_refs = g.evaluation_refs(opponents.strip())
    else:
        opponent_refs = [o.strip() for o in opponents.split(",") if o.strip()]
    opponent_specs = unique_names([resolve(o, g) for o in opponent_refs])
    with progress_bar(f"{g.name}: matches") as update:
        result = run_evaluation(g, specs, opponent_specs, matches=matches, seed=seed, processes=processes,
                                limits=SandboxLimits(isolate_matches=isolate_matches), progress=update)
    entries = []
    for spec, score in zip(specs, result.scores):
        entry = score.to_dict()
        entry["forfeits"] = dict(result.table.forfeits(spec.name))
        entry["forfeit_examples"] = result.forfeit_details(spec.name, limit=3)
        entries.append(untrusted(entry))  # a policy's text (its forfeits' details) is data
    if json_out:
        print(json.dumps({"game": g.name, "matches_per_cell": matches, "seed": result.seed,
                          "isolate_matches": isolate_matches, "opponents": [o.name for o in opponent_specs],
                          "results": entries}))
        return
    table = Table("policy", "PopReturn", "PopExpl", "AggScore", "worst opponent", "matches", "forfeits",
                  title=f"{g.name}: {len(opponent_specs)} opponents × {matches} matches (±95% CI), "
                        f"seed {result.seed}" + (", a worker per match" if isolate_matches else ""))
    for e in untrusted(entries, markup=True):
        ci = e["ci95"]
        forfeits = ", ".join(f"{k}: {v}" for k, v in e["forfeits"].items()) or "-"
        table.add_row(e["policy"], f"{e['pop_return']:.2f} ± {ci['pop_return']:.2f}",
                      f"{e['pop_expl']:.2f} ± {ci['pop_expl']:.2f}", f"{e['agg_score']:.2f} ± {ci['agg_score']:.2f}",
                      e["worst_opponent"], str(e["matches"]), forfeits)
    console.print(table)
    console.print("[dim]PopExpl is a max over noisy means: biased upward with few matches per cell.[/dim]")
    for e in untrusted(entries, markup=True):
        for ex in e["forfeit_examples"]:
            console.print(f"[yellow]{e['policy']}[/yellow] forfeited vs {', '.join(ex['opponents'])}: "
                          f"{ex['reason']}: {ex['detail'].splitlines()[-1] if ex['detail'] else ''}")


@app.command("exploit")
def exploit_cmd(
    game: str = typer.Option(..., "--game", "-g", help="A small sequential OpenSpiel game (kuhn_poker, leduc_poker, ...)."),
    policy: List[str] = typer.Option(..., "--policy", "-p", help="Policy file or builtin:NAME; repeat for a mixture."),
    sigma: Optional[str] = typer.Option(None, "--sigma", help="Comma-separated mixture weights (default uniform)."),
    samples: int = typer.Option(8, "--samples", help="Queries per information state for stochastic policies."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Exact NashConv and exploitability of a code policy or mixture (OpenSpiel conventions)."""
    from csro.evaluation import exact_exploitability, resolve
    from csro.games import load_game

    g = load_game(game)
    specs = [resolve(p, g) for p in policy]
    weights = None
    if sigma is not None:
        try:
            weights = [float(x) for x in sigma.split(",")]
        except ValueError as exc:
            raise ConfigError(f"--sigma must be comma-separated numbers, got {sigma!r}") from exc
        if len(weights) != len(specs):
            raise ConfigError(f"--sigma has {len(weights)} weights for {len(specs)} policies")
    if samples < 1:
        raise ConfigError(f"--samples must be at least 1, got {samples}")
    result = exact_exploitability(g, specs, weights, samples=samples)
    if json_out:
        print(json.dumps(result.to_dict()))
        return
    console.print(f"{g.name}: NashConv [bold]{result.nash_conv:.6f}[/bold], exploitability "
                  f"{result.exploitability:.6f} over {result.infostates} information states"
                  + ("" if result.exact else f" (estimated from {result.samples} samples per state)"))


@app.command("play")
def play_cmd(
    game: str = typer.Option(..., "--game", "-g", help="rrps, leduc, or an OpenSpiel game string."),
    policies: List[str] = typer.Argument(..., help="One policy per seat: file paths or builtin:NAME."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Match seed (default: one drawn at random and shown, "
                                       "which no policy can guess)."),
    max_lines: int = typer.Option(60, "--max-lines", help="Trace lines to show (0 = all)."),
) -> None:
    """Play one match and print a readable trace."""
    from csro.evaluation import play_traced, resolve, unique_names
    from csro.games import load_game
    from csro.seeding import draw_seed

    g = load_game(game)
    if len(policies) != g.num_players:
        raise ConfigError(f"{g.name} needs {g.num_players} policies, got {len(policies)}")
    specs = unique_names([resolve(p, g) for p in policies])
    seed = draw_seed() if seed is None else seed
    trace = play_traced(g, specs, seed)
    lines = trace.lines if max_lines == 0 or len(trace.lines) <= max_lines else (
        trace.lines[: max_lines // 2] + [f"... {len(trace.lines) - max_lines} more lines ..."] + trace.lines[-max_lines // 2:])
    for line in lines:  # the actions a policy played are its text
        console.print(untrusted(line), highlight=False, markup=False)
    names = [untrusted(spec.name, markup=True) for spec in specs]
    for name, ret in zip(names, trace.result.returns):
        console.print(f"{name}: {ret:+g}", highlight=False)
    console.print(f"seed {seed} (--seed {seed} plays this match again)", highlight=False)
    if trace.result.forfeit:
        seat, reason, detail = untrusted(trace.result.forfeit, markup=True)
        console.print(f"[red]{names[seat]} forfeited: {reason}[/red] {detail}", highlight=False)
