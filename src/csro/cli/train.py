"""``csro train`` and ``csro train-ablation``: SRPO training of the oracle's LLM team."""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from csro.cli._app import app

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


@app.command("train")
def train_cmd(
    out: str = typer.Option(..., "--out", help="run directory (train.db, checkpoints/)"),
    task: Optional[str] = typer.Option(None, "--task", help="arith (default) | rrps-team"),
    algo: Optional[str] = typer.Option(None, "--algo", help="srpo (default) | grpo | drmas"),
    norm: Optional[str] = typer.Option(None, "--norm", help="srpo set-ratio normalisation: sqrt (default) | sum | mean | singleton"),
    steps: Optional[int] = typer.Option(None, "--steps", help="training steps (default 30)"),
    k: Optional[int] = typer.Option(None, "--k", help="parallel workers (solvers / proposers) at most (default 3)"),
    model: Optional[str] = typer.Option(None, "--model", help="smollm2-135m (default) | tiny (random, for tests)"),
    group_size: Optional[int] = typer.Option(None, "--group-size", help="episodes per problem (default 4)"),
    seed: Optional[int] = typer.Option(None, "--seed", help="run seed (default 0)"),
    lr: Optional[float] = typer.Option(None, "--lr", help="AdamW learning rate (default 2e-3)"),
    tokens: Optional[str] = typer.Option(None, "--tokens", help="max new tokens per role, e.g. solver=8,verifier=6"),
    bf16: Optional[bool] = typer.Option(None, "--bf16/--fp32", help="bf16 autocast for sampling, old and new log-probs alike (default fp32)"),
    threads: Optional[int] = typer.Option(None, "--threads", help="torch CPU threads (default 1)"),
    device: Optional[str] = typer.Option(None, "--device", help="auto (default) | cpu | cuda"),
    resume: bool = typer.Option(False, "--resume", help="continue the run stored in --out (flags not given: as stored)"),
    json_out: bool = typer.Option(False, "--json", help="print the summary as JSON"),
) -> None:
    """Train the team's policy with SRPO (or a baseline); reward over steps in DIR/train.db."""
    from csro.train.config import train_config

    values = {key: v for key, v in dict(task=task, algo=algo, norm=norm, steps=steps, k=k, model=model,
                                      group_size=group_size, seed=seed, lr=lr, tokens=_tokens(tokens), bf16=bf16,
                                      threads=threads, device=device).items() if v is not None}
    if not resume:
        train_config(**values)  # a bad flag fails here, before torch is imported
    from csro.train.trainer import open_or_create

    run = open_or_create(values, out, resume)
    config = run.config
    try:
        if run.start_step:
            console.print(f"resuming {out} at step {run.start_step}")

        def show(m: dict) -> None:
            if not json_out:
                console.print(f"step {m['step']:3d}  reward {m['reward_mean']:.3f}  loss {m['loss']:+.4f}  "
                              f"K {m['k_mean']:.2f}  {m['step_s']:.1f} s (generate {m['generate_s']:.1f}, "
                              f"update {m['update_s']:.1f})")

        summary = run.run(on_step=show)
        steps_done = run.store.steps()
    finally:
        run.store.close()
    if json_out:
        print(json.dumps(summary))
        return
    _print_steps(steps_done, f"{config.task} / {config.algo}" + (f" ({config.norm})" if config.algo == "srpo" else "")
                 + f" / {config.model}")
    console.print(f"reward: first step {summary['reward_first']:.3f}, mean {summary['reward_mean']:.3f}, "
                  f"last half {summary['reward_mean_last_half']:.3f}; {summary['seconds_per_step']:.1f} s/step "
                  f"({summary['generate_share']:.0%} generation, {summary['update_share']:.0%} update); "
                  f"dropped events {summary['dropped_events']}")


@app.command("train-ablation")
def train_ablation_cmd(
    task: str = typer.Option("arith", "--task", help="arith | rrps-team"),
    steps: int = typer.Option(3, "--steps", help="training steps per run"),
    seeds: int = typer.Option(1, "--seeds", help="seeds per variant (the same for every variant)"),
    out: str = typer.Option(..., "--out", help="directory: one run per (variant, seed), the table and plots"),
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
