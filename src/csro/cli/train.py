"""``csro train-ablation``, and how a training run (``kind: train``) is shown: SRPO training of the oracle's LLM team.

A training run is started with ``csro run CONFIG`` (``kind: train``, e.g. ``configs/train-arith.yaml``)
and continued, inspected and reported with ``csro resume / status / report`` (``csro.cli.run``);
``VIEW`` is how it is shown.
"""

from __future__ import annotations

import pathlib
import sys
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from csro.cli._app import app
from csro.cli._views import View

console = Console(width=None if sys.stdout.isatty() else 160)


def _tokens(spec: Optional[str]) -> Optional[dict]:
    """``role=N,role=N`` into a dict (None when not given)."""
    if not spec:
        return None
    from csro.errors import ConfigError

    out = {}
    for part in spec.split(","):
        role, _, n = part.partition("=")
        if not n.strip().isdigit():
            raise ConfigError(f"--tokens: expected role=N[,role=N...], got {part!r}")
        out[role.strip()] = int(n)
    return out


def _print_steps(steps: list[dict], title: str) -> None:
    table = Table("step", "reward", "pass@group", "K (workers)", "loss", "ratio", "clip", "dropped",
                  "gen s", "update s", "step s", title=title)
    for s in steps:
        table.add_row(str(s["step"]), f"{s['reward_mean']:.3f}", f"{s['pass_at_group']:.2f}", f"{s['k_mean']:.2f}",
                      f"{s['loss']:+.4f}", f"{s['ratio_mean']:.3f}", f"{s['clip_frac']:.2f}", str(s["dropped_events"]),
                      f"{s['generate_s']:.1f}", f"{s['update_s']:.1f}", f"{s['step_s']:.1f}")
    console.print(table)


def event_line(step: int, kind: str, data: dict, total: int | None) -> str | None:
    """One terminal line per finished training step."""
    if kind != "train_step":
        return None
    m = data
    return (f"step {m['step']:3d}/{total}  reward {m['reward_mean']:.3f}  loss {m['loss']:+.4f}  K {m['k_mean']:.2f}  "
            f"{m['step_s']:.1f} s (generate {m['generate_s']:.1f}, update {m['update_s']:.1f})")


def closing(directory: pathlib.Path, report: pathlib.Path, s: dict) -> None:
    """The steps table and the reward summary."""
    from csro.train.store import TrainStore

    with TrainStore.open(directory) as store:
        steps = store.steps()
    _print_steps(steps, f"{s['task']} / {s['algo']} / {s['model']}")
    summary = s["final"] or {}
    if summary.get("steps"):
        console.print(f"reward: first step {summary['reward_first']:.3f}, mean {summary['reward_mean']:.3f}, "
                      f"last half {summary['reward_mean_last_half']:.3f}; {summary['seconds_per_step']:.1f} s/step "
                      f"({summary['generate_share']:.0%} generation, {summary['update_share']:.0%} update); "
                      f"dropped events {summary['dropped_events']}")
    console.print(f"report: {report}", highlight=False)


def status_text(directory: pathlib.Path, s: dict) -> None:
    done = len(s["reward_over_steps"])
    state = "done" if s["done"] else f"{done} of {s['steps']} steps finished"
    rewards = ", ".join(f"{r:.3f}" for r in s["reward_over_steps"]) or "-"
    console.print(f"{directory}: training {s['task']} / {s['algo']} / {s['model']}, {state}; reward over steps: "
                  f"{rewards}", highlight=False)


VIEW = View(event_line=event_line, closing=closing, status=status_text, total=lambda s: s["steps"])


@app.command("train-ablation")
def train_ablation_cmd(
    task: str = typer.Option("arith", "--task", help="arith | rrps-team"),
    steps: int = typer.Option(3, "--steps", help="training steps per run"),
    seeds: int = typer.Option(1, "--seeds", help="seeds per variant (the same for every variant)"),
    out: str = typer.Option(..., "--out", "-o", help="directory: one run per (variant, seed), the table and plots"),
    k: int = typer.Option(3, "--k"),
    model: str = typer.Option("smollm2-135m", "--model", help="smollm2-135m | tiny"),
    group_size: Optional[int] = typer.Option(None, "--group-size"),
    tokens: Optional[str] = typer.Option(None, "--tokens", help="max new tokens per role"),
    seed: int = typer.Option(0, "--seed", help="first seed"),
) -> None:
    """Every normalisation (sqrt, sum, mean, singleton) and the baselines (grpo, drmas), same seeds."""
    from csro.errors import ConfigError
    from csro.train.ablation import run_ablation, table
    from csro.train.config import train_config

    if seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {seeds}")
    values = dict(task=task, steps=steps, k=k, model=model, group_size=group_size, tokens=_tokens(tokens), seed=seed)
    base = train_config(**{key: v for key, v in values.items() if v is not None})
    rows = run_ablation(base, seeds, out, on_run=lambda name, s: console.print(f"[bold]{name}[/bold] seed {s}"))
    result = Table("variant", "mean reward", "sd (seeds)", "first", "last half", "pass@group", "loss", "grad norm",
                   "dropped", "s/step",
                   title=f"ablation: {task}, {steps} steps × {seeds} seed(s)")
    for r in table(rows):
        result.add_row(r["variant"], f"{r['reward_mean']:.3f}", f"{r['reward_sd_over_seeds']:.3f}",
                       f"{r['reward_first']:.3f}", f"{r['reward_last_half']:.3f}", f"{r['pass_at_group']:.2f}",
                       f"{r['loss']:+.4f}", f"{r['grad_norm']:.3f}",
                       str(r["dropped_events"]), f"{r['seconds_per_step']:.1f}")
    console.print(result)
    console.print(f"wrote {out}/ablation.md, ablation.csv, ablation_rewards.png, ablation_rewards.svg")
