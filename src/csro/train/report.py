"""The report of a training run (``kind: train``): its configuration, reward and loss over steps.

Yang et al. (arXiv 2609.08452) judge SRPO by the team's reward over training steps; this page
shows that curve from the run's ``train.db`` with each step's objective statistics and
timings (the layout is ours). Completions stored with the events are LLM text: escaped.
"""

from __future__ import annotations

import os
import pathlib

import yaml
from matplotlib.figure import Figure

from csro.report import REPORT_NAME, details, document, esc, figure, fmt, key_values, pre, table, to_svg, write_atomically
from csro.train.store import TrainStore

SECTIONS = (("run", "Run"), ("steps", "Reward over steps"))
COLUMNS = (("reward_mean", "reward"), ("pass_at_group", "pass@group"), ("k_mean", "K (workers)"), ("loss", "loss"),
           ("ratio_mean", "ratio"), ("clip_frac", "clip"), ("dropped_events", "dropped"), ("step_s", "step s"))


def build_training_html(store: TrainStore) -> str:
    """The report of the training run in ``store`` as one HTML document."""
    config, steps, final = store.config(), store.steps(), store.final()
    facts = key_values([
        ("task / objective", esc(f"{config['task']} / {config['algo']}"
                                 + (f" ({config['norm']})" if config["algo"] == "srpo" else ""))),
        ("model", esc(config["model"])),
        ("status", "finished" if final else f"{len(steps)} of {config['steps']} steps done (resumable)"),
        ("mean reward", fmt(final["reward_mean"]) if final and final.get("steps") else "-"),
        ("seconds per step", fmt(final["seconds_per_step"]) if final and final.get("steps") else "-"),
        ("run directory", f"<code>{esc(store.directory)}</code>"),
    ])
    rows = [[str(s["step"]), *(fmt(s.get(key)) for key, _ in COLUMNS)] for s in steps]
    body = (f'<section id="run"><h2>Run</h2>{facts}'
            f'{details("Configuration (YAML)", pre(yaml.safe_dump(config, sort_keys=False), "yaml"))}</section>'
            f'<section id="steps"><h2>Reward over steps</h2>'
            f'{figure(_reward_plot(steps), "Mean reward of each step (left) and the loss (right).", "No step has finished yet.")}'
            f'{table(["step", *(name for _, name in COLUMNS)], rows)}</section>')
    return document(f"CSRO training: {config['task']} / {config['algo']}", body, SECTIONS)


def _reward_plot(steps: list[dict]) -> str | None:
    if not steps:
        return None
    fig = Figure(figsize=(10, 3.2))
    left, right = fig.subplots(1, 2)
    x = [s["step"] for s in steps]
    left.plot(x, [s["reward_mean"] for s in steps], marker="o", ms=3)
    left.set(xlabel="step", ylabel="mean reward", title="Reward over steps")
    right.plot(x, [s["loss"] for s in steps], marker="o", ms=3, color="C3")
    right.set(xlabel="step", ylabel="loss", title="Loss (-J)")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    return to_svg(fig, "training", "reward over steps")


def write_training_report(directory: str | os.PathLike) -> pathlib.Path:
    """Write ``DIR/report.html`` from the training store of ``DIR`` (atomically); returns its path."""
    with TrainStore.open(directory) as store:
        text = build_training_html(store)
    return write_atomically(pathlib.Path(directory) / REPORT_NAME, text)
