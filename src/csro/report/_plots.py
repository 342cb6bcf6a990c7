"""The report's plots, drawn with matplotlib and returned as inline SVG text.

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot, so no global
backend or figure registry is touched) and saved as SVG with text drawn as paths: the SVG
needs no font and no network. Each plot's element ids get a unique prefix so several SVGs
can live in one HTML document without their ids (glyphs, clip paths) colliding.
Every function returns None when there is nothing to draw.
"""

from __future__ import annotations

import html
import io
import math
import re
from typing import Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from csro.evaluation.payoff_table import PayoffTable
from csro.store import SigmaRecord

METRICS = (("pop_return", "PopReturn"), ("pop_expl", "PopExpl"), ("agg_score", "AggScore"))
ANNOTATE_MAX = 24  # annotate heatmap cells up to this many rows/columns


def to_svg(fig: Figure, label: str, title: str) -> str:
    """The figure as an ``<svg>`` element whose ids are prefixed with ``label``."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": label}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    ids = sorted(set(re.findall(r'\bid="([^"]+)"', text)), key=len, reverse=True)
    if ids:
        pattern = re.compile(r'(\bid="|href="#|url\(#)(' + "|".join(map(re.escape, ids)) + r')(?=[")])')
        text = pattern.sub(lambda m: f"{m.group(1)}{label}-{m.group(2)}", text)
    return text.replace("<svg ", f'<svg role="img" aria-label="{html.escape(title)}" ', 1)


def _heatmap(ax, grid: np.ndarray, **style):
    """Cells as vector patches (``imshow`` would embed a raster ``data:`` image), row 0 on top; NaN blank."""
    rows, cols = grid.shape
    image = ax.pcolormesh(np.arange(cols + 1) - 0.5, np.arange(rows + 1) - 0.5, np.ma.masked_invalid(grid),
                          edgecolors="white", linewidth=0.5, **style)
    ax.set_facecolor("0.93")
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    return image


def _colorbar(fig: Figure, image, ax) -> None:
    """A vector colour bar (matplotlib rasterises long ones into a ``data:`` image)."""
    fig.colorbar(image, ax=ax, fraction=0.04).solids.set_rasterized(False)


def metrics_plot(iterations: Sequence[dict]) -> str | None:
    """PopReturn, PopExpl, AggScore (with 95% bands) and the meta NashConv over iterations."""
    drawn = [(key, name) for key, name in METRICS if any(it.get(key) is not None for it in iterations)]
    has_conv = any(it.get("meta_nash_conv") is not None for it in iterations)
    if not drawn and not has_conv:
        return None
    panels = int(bool(drawn)) + int(has_conv)
    fig = Figure(figsize=(6.2 * panels, 3.4))
    axes = fig.subplots(1, panels, squeeze=False)[0]
    if drawn:
        ax = axes[0]
        for key, name in drawn:
            rows = [it for it in iterations if it.get(key) is not None]
            x = np.array([it["iteration"] for it in rows])
            y = np.array([it[key] for it in rows], dtype=float)
            ax.plot(x, y, marker="o", ms=3, label=name)
            ci = np.array([(it.get("ci95") or {}).get(key) or 0.0 for it in rows], dtype=float)
            if ci.any():
                ax.fill_between(x, y - ci, y + ci, alpha=0.2)
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set(xlabel="iteration", ylabel="score", title="Population metrics (±95% CI)")
        ax.legend(fontsize=8)
    if has_conv:
        ax = axes[-1]
        rows = [it for it in iterations if it.get("meta_nash_conv") is not None]
        ax.plot([it["iteration"] for it in rows], [it["meta_nash_conv"] for it in rows], marker="o", ms=3, color="C3")
        ax.set(xlabel="iteration", ylabel="NashConv", title="Meta-game NashConv of sigma")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    return to_svg(fig, "metrics", "metrics over iterations")


def sigma_plot(sigmas: Sequence[SigmaRecord], player: int) -> str | None:
    """Heatmap of sigma_k over the policies (rows) and iterations (columns); blank before a policy exists."""
    recs = [s for s in sigmas if s.player == player]
    if not recs:
        return None
    names = list(dict.fromkeys(n for s in recs for n in s.names))
    iters = [s.iteration for s in recs]
    grid = np.full((len(names), len(recs)), np.nan)
    for j, s in enumerate(recs):
        for name, w in zip(s.names, s.sigma):
            grid[names.index(name), j] = w
    fig = Figure(figsize=(max(4.0, 0.42 * len(recs) + 2.2), max(2.2, 0.3 * len(names) + 1.2)))
    ax = fig.subplots()
    image = _heatmap(ax, grid, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(recs)), [str(k) for k in iters])
    ax.set_yticks(range(len(names)), names)
    ax.set(xlabel="iteration", title=f"Meta-strategy sigma (player {player})")
    if len(names) <= ANNOTATE_MAX and len(recs) <= ANNOTATE_MAX:
        for (i, j), w in np.ndenumerate(grid):
            if not math.isnan(w) and w >= 0.005:
                ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=7, color="white" if w > 0.6 else "black")
    _colorbar(fig, image, ax)
    return to_svg(fig, f"sigma{player}", f"sigma over iterations, player {player}")


def payoff_plot(table: PayoffTable, names: Sequence[str]) -> str | None:
    """Heatmap of the population's mean returns (row policy against column policy), annotated."""
    names = [n for n in names if any(table.has(n, o) for o in names)]
    if not names:
        return None
    grid = np.array([[table.mean(a, b) if table.has(a, b) else np.nan for b in names] for a in names])
    bound = float(np.nanmax(np.abs(grid))) or 1.0
    size = max(3.0, 0.38 * len(names) + 1.6)
    fig = Figure(figsize=(size + 1.0, size))
    ax = fig.subplots()
    image = _heatmap(ax, grid, cmap="RdBu", vmin=-bound, vmax=bound)
    ax.set_aspect("equal")
    ax.set_xticks(range(len(names)), names, rotation=90)
    ax.set_yticks(range(len(names)), names)
    ax.set(xlabel="opponent", ylabel="policy", title="Population payoff table (row's mean return)")
    if len(names) <= ANNOTATE_MAX:
        for (i, j), v in np.ndenumerate(grid):
            if not math.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(v) > 0.6 * bound else "black")
    _colorbar(fig, image, ax)
    return to_svg(fig, "payoff", "population payoff table")


def per_opponent_plot(per_opponent: Mapping[str, float]) -> str | None:
    """Horizontal bars of the final mixture's mean return against each opponent, sorted."""
    items = sorted(((float(v), str(k)) for k, v in per_opponent.items() if v is not None), reverse=True)
    if not items:
        return None
    values = [v for v, _ in items]
    fig = Figure(figsize=(7.0, max(1.8, 0.24 * len(items) + 1.0)))
    ax = fig.subplots()
    y = np.arange(len(items))
    ax.barh(y, values, color=["#2b7bba" if v >= 0 else "#c8553d" for v in values])
    ax.set_yticks(y, [name for _, name in items], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="0.4", lw=0.8)
    ax.grid(axis="x", alpha=0.3)
    ax.set(xlabel="mean return of the final mixture", title="Final mixture against each opponent")
    return to_svg(fig, "peropp", "final mixture against each opponent")


def evolution_plot(programs: Sequence[dict], title: str = "Fitness over the search") -> str | None:
    """Each evaluated program's fitness when it was made (one colour per island) and the best so
    far, in the order the programs were made (all PSRO iterations, or one discovery run)."""
    born = [(i, {**p, "fitness": (p.get("info") or {}).get("fitness_at_birth")}) for i, p in enumerate(programs)]
    scored = [(i, p) for i, p in born if p["fitness"] is not None and p.get("mutation") != "migrant"]
    if not scored:
        return None
    fig = Figure(figsize=(7.5, 3.4))
    ax = fig.subplots()
    islands = sorted({p["island"] for _, p in scored})
    for island in islands:
        pts = [(i, p["fitness"]) for i, p in scored if p["island"] == island]
        ax.scatter([x for x, _ in pts], [y for _, y in pts], s=14, alpha=0.75, label=f"island {island}")
    best, xs, ys = -math.inf, [], []
    for i, p in scored:
        best = max(best, p["fitness"])
        xs.append(i)
        ys.append(best)
    ax.step(xs, ys, where="post", color="black", linewidth=1.2, label="best so far")
    starts = sorted({p["iteration"] for _, p in scored})
    if len(starts) > 1:
        for it in starts[1:]:
            first = next(i for i, p in enumerate(programs) if p["iteration"] == it)
            ax.axvline(first - 0.5, color="0.7", linestyle=":", linewidth=0.8)
    ax.set_xlabel("program (in the order made; dotted: a new PSRO iteration, sigma changed)")
    ax.set_ylabel("fitness at birth")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    return to_svg(fig, "evolution", title)


def discovery_curves_plot(final: Mapping) -> str | None:
    """Exploitability over iterations on each game (log-log): the discovered program, bold,
    against the library's baselines; titles say whether the game was trained on or held out."""
    games = [(name, entry) for name, entry in final.get("games", {}).items()
             if any("exploitability" in c for c in entry["curves"].values())]
    if not games:
        return None
    cols = min(3, len(games))
    rows = -(-len(games) // cols)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    x = final["checkpoints"]
    for ax, (name, entry) in zip(axes, games):
        for algo, curve in entry["curves"].items():
            if "exploitability" not in curve:
                continue
            y = np.maximum(np.asarray(curve["exploitability"], dtype=float), 1e-12)
            bold = algo == "discovered"
            ax.plot(x, y, lw=2.4 if bold else 1.1, color="black" if bold else None, label=algo, zorder=3 if bold else 2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{name} ({entry['split']})", fontsize=10)
        ax.set_xlabel("iteration")
        ax.set_ylabel("exploitability")
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=7)
    for ax in axes[len(games):]:
        ax.set_visible(False)
    fig.tight_layout()
    return to_svg(fig, "discovery", "exploitability curves of the discovered program and the baselines")
