"""The SRPO ablation: every normalisation and both baselines on the same seeds.

The paper (arXiv 2609.08452) reports, at K = 5 on multi-turn search, 1/sqrt(K) ahead of the
plain sum, the singleton (K = 1) split and the mean 1/K. ``run_ablation`` trains
``srpo`` with ``sqrt``, ``sum``, ``mean``, ``singleton`` and the baselines ``grpo`` and
``drmas`` with identical settings and seeds, one run directory per (variant, seed) under
``out`` (each resumable), then writes ``ablation.csv``, ``ablation.md`` (the table) and
``ablation_rewards.png`` / ``.svg`` (mean reward over steps per variant); the mean loss and
the pre-clip gradient norm show how each normalisation scales the update. Sampling is
seeded by (seed, step, stage), so the variants draw the same tokens until their weights
have drifted apart: over a few steps their rewards agree and only the update statistics
differ. A budget this small shows that the machinery runs and what it measured, not the
paper's ranking.
"""

from __future__ import annotations

import csv
import pathlib
import statistics
from typing import Callable, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from csro.train.config import TrainConfig
from csro.train.store import TrainStore
from csro.train.trainer import TrainRun

VARIANTS: tuple[tuple[str, str, str], ...] = (
    ("srpo-sqrt", "srpo", "sqrt"), ("srpo-sum", "srpo", "sum"), ("srpo-mean", "srpo", "mean"),
    ("srpo-singleton", "srpo", "singleton"), ("grpo", "grpo", "sqrt"), ("drmas", "drmas", "sqrt"))


def run_ablation(base: TrainConfig, seeds: int, out: str | pathlib.Path,
                 on_run: Callable[[str, int], None] | None = None) -> list[dict]:
    """Train every variant for every seed (resuming finished or partial runs) and write the outputs."""
    out = pathlib.Path(out)
    rows = []
    for name, algo, norm in VARIANTS:
        for seed in range(seeds):
            if on_run is not None:
                on_run(name, seed)
            config = base.model_copy(update={"algo": algo, "norm": norm, "seed": base.seed + seed})
            directory = out / f"{name}-seed{seed}"
            run = TrainRun.resume(directory) if TrainStore.exists(directory) else TrainRun.create(config, directory)
            try:
                summary = run.run()
            finally:
                run.store.close()
            rows.append({"variant": name, "seed": seed, **summary})
    write_outputs(rows, out, base)
    return rows


def table(rows: Sequence[dict]) -> list[dict]:
    """Per variant: mean over seeds of the run summaries (and the spread over seeds)."""
    out = []
    for name, _, _ in VARIANTS:
        runs = [r for r in rows if r["variant"] == name]
        if not runs:
            continue
        means = [r["reward_mean"] for r in runs]
        out.append({"variant": name, "seeds": len(runs),
                    "reward_mean": statistics.fmean(means),
                    "reward_sd_over_seeds": statistics.pstdev(means) if len(means) > 1 else 0.0,
                    "reward_first": statistics.fmean(r["reward_first"] for r in runs),
                    "reward_last_half": statistics.fmean(r["reward_mean_last_half"] for r in runs),
                    "pass_at_group": statistics.fmean(r["pass_at_group_mean"] for r in runs),
                    "loss": statistics.fmean(r["loss_mean"] for r in runs),
                    "grad_norm": statistics.fmean(r["grad_norm_mean"] for r in runs),
                    "dropped_events": sum(r["dropped_events"] for r in runs),
                    "seconds_per_step": statistics.fmean(r["seconds_per_step"] for r in runs)})
    return out


def write_outputs(rows: Sequence[dict], out: pathlib.Path, base: TrainConfig) -> None:
    summary = table(rows)
    with open(out / "ablation.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(summary[0]))
        writer.writeheader()
        writer.writerows(summary)
    lines = [f"# SRPO ablation: task {base.task}, model {base.model}, k = {base.k}, group {base.group_size}, "
             f"{base.steps} steps, {max(r['seeds'] for r in summary)} seed(s)", "",
             "| variant | mean reward | sd over seeds | first step | last half | pass@group | loss | grad norm "
             "| dropped | s/step |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['variant']} | {r['reward_mean']:.3f} | {r['reward_sd_over_seeds']:.3f} | {r['reward_first']:.3f} | "
              f"{r['reward_last_half']:.3f} | {r['pass_at_group']:.3f} | {r['loss']:+.4f} | {r['grad_norm']:.3f} | "
              f"{r['dropped_events']} | {r['seconds_per_step']:.1f} |"
              for r in summary]
    (out / "ablation.md").write_text("\n".join(lines) + "\n")
    fig = Figure(figsize=(11, 4))
    reward_ax, grad_ax = fig.subplots(1, 2)
    for name, _, _ in VARIANTS:
        runs = [r for r in rows if r["variant"] == name]
        for ax, key in ((reward_ax, "reward_over_steps"), (grad_ax, "grad_norm_over_steps")):
            curves = [r[key] for r in runs]
            if curves:
                n = min(len(c) for c in curves)
                ax.plot(range(n), [statistics.fmean(c[i] for c in curves) for i in range(n)], marker="o", label=name)
    reward_ax.set_ylabel("mean team reward")
    reward_ax.set_title(f"{base.task}: reward over steps (mean over seeds)")
    grad_ax.set_ylabel("pre-clip gradient norm")
    grad_ax.set_title("update size (mean over mini-batches and seeds)")
    for ax in (reward_ax, grad_ax):
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    reward_ax.legend(fontsize=8)
    fig.savefig(out / "ablation_rewards.png", dpi=100, bbox_inches="tight")
    fig.savefig(out / "ablation_rewards.svg", bbox_inches="tight", metadata={"Date": None})

