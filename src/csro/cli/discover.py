"""``csro discover cfr|psro``: evolve CFR hooks or a PSRO meta-solver with the LLM (Li et al. 2026)."""

from __future__ import annotations

import pathlib
import sys
from typing import List, Optional

import typer
import yaml
from rich.console import Console
from rich.table import Table

from csro.cli._app import app
from csro.config import apply_overrides, parse_model
from csro.discover import DiscoverConfig
from csro.discover import start as start_discovery
from csro.errors import ConfigError

out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def load_discover_config(path: pathlib.Path | None, overrides: List[str], **fields) -> DiscoverConfig:
    """The YAML file (if any), then ``--set`` overrides, then the command's flags."""
    data: dict = {}
    if path is not None:
        try:
            data = yaml.safe_load(pathlib.Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read the discovery configuration {path}: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a discovery configuration is a mapping of fields")
    data = apply_overrides(data, overrides)
    data.update({k: v for k, v in fields.items() if v is not None})
    return parse_model(DiscoverConfig, data)


def event_line(kind: str, data: dict) -> str | None:
    """One terminal line for a discovery or search event (None: not shown)."""
    if kind == "discover_start":
        return (f"[bold]discovering {data['target']}[/bold]: K = {data['k']}, train {', '.join(data['train'])}, "
                f"test {', '.join(data['test'])}")
    if kind == "evolve_generation":
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(data["statuses"].items()))
        best = data.get("best_fitness")
        return (f"  generation {data['generation']}: {data['programs']} programs ({statuses}); "
                f"best fitness {best:.4g}" if best is not None else f"  generation {data['generation']}: {statuses}")
    if kind == "evolve_stopped":
        return f"  search stopped by {data['reason']} after {data['llm_calls']} LLM calls, {data['evaluations']} full evaluations"
    if kind == "discover_compare":
        return f"comparing {data['best']} with the library on {data['games']} games"
    return None


def print_final(directory: pathlib.Path) -> None:
    from csro.store import RunStore

    with RunStore.open(directory) as store:
        final = store.final()
    if not final:
        return
    table = Table("game", "split", "discovered", *final["baselines"],
                  title=f"exploitability after K = {final['k']} iterations")
    for name, entry in final["games"].items():
        cells = []
        for algo in ["discovered", *final["baselines"]]:
            c = entry["curves"].get(algo, {})
            cells.append(f"{c['exploitability'][-1]:.3e}" if "exploitability" in c else "failed")
        table.add_row(name, entry["split"], *cells)
    out.print(table)
    out.print(f"best program {final['best']}: fitness {final['fitness']:.4g} (seed {final['seed_fitness']:.4g}); "
              f"{final['programs']} programs, {final['llm_calls']} LLM calls, stopped by {final['stop']}")
    out.print(f"report: {directory / 'report.html'}")


@app.command("discover")
def discover_cmd(
    target: str = typer.Argument(..., help="cfr (the three CFR hooks) or psro (the training meta-solver)."),
    out_dir: pathlib.Path = typer.Option(..., "--out", "-o", help="The new run directory."),
    train_games: Optional[str] = typer.Option(None, "--train-games", help="Suite set (train, test, all) or comma-separated suite games."),
    test_games: Optional[str] = typer.Option(None, "--test-games", help="Held-out games, the same way."),
    budget: Optional[int] = typer.Option(None, "--budget", help="LLM calls in all."),
    iterations: Optional[int] = typer.Option(None, "--iterations", help="K (default: 1000 for cfr, 100 for psro, as in the paper)."),
    config: Optional[pathlib.Path] = typer.Option(None, "--config", help="A YAML discovery configuration."),
    overrides: List[str] = typer.Option([], "--set", help="Override a field: key.path=value (repeatable)."),
) -> None:
    """Evolve CFR hooks (from CFR+) or a PSRO meta-solver; report the best against the library."""
    if target not in ("cfr", "psro"):
        raise ConfigError(f"discover: unknown target {target!r}; use cfr or psro")
    cfg = load_discover_config(config, overrides, target=target, train_games=train_games, test_games=test_games,
                               budget=budget, iterations=iterations)
    start_discovery(cfg, out_dir, on_event=_print_event)
    print_final(out_dir)


def _print_event(kind: str, data: dict) -> None:
    line = event_line(kind, data)
    if line:
        err.print(line, highlight=False)
