"""The report's plots, returned as inline SVG text (drawn by ``csro.report._svg``).

Every function returns None when there is nothing to draw. Sizes are in pixels.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from csro.evaluation.payoff_table import PayoffTable
from csro.report._svg import BLUES, CYCLE, LABEL_CHARS, RDBU, Axes, Chart, Heatmap
from csro.store import SigmaRecord

METRICS = (("pop_return", "PopReturn"), ("pop_expl", "PopExpl"), ("agg_score", "AggScore"))
ANNOTATE_MAX = 24  # annotate heatmap cells up to this many rows/columns


def metrics_plot(iterations: Sequence[dict]) -> str | None:
    """PopReturn, PopExpl, AggScore (with 95% bands) and the meta NashConv over iterations."""
    drawn = [(key, name) for key, name in METRICS if any(it.get(key) is not None for it in iterations)]
    has_conv = any(it.get("meta_nash_conv") is not None for it in iterations)
    if not drawn and not has_conv:
        return None
    panels = []
    if drawn:
        ax = Axes("Population metrics (±95% CI)", "iteration", "score", integer_x=True)
        ax.rule(y=0.0)
        for colour, (key, name) in zip(CYCLE, drawn):
            rows = [it for it in iterations if it.get(key) is not None]
            x = [it["iteration"] for it in rows]
            y = [float(it[key]) for it in rows]
            ci = [float((it.get("ci95") or {}).get(key) or 0.0) for it in rows]
            if any(ci):
                ax.band(x, [v - c for v, c in zip(y, ci)], [v + c for v, c in zip(y, ci)], colour)
            ax.line(x, y, label=name, colour=colour)
        panels.append(ax)
    if has_conv:
        ax = Axes("Meta-game NashConv of sigma", "iteration", "NashConv", integer_x=True)
        rows = [it for it in iterations if it.get("meta_nash_conv") is not None]
        ax.line([it["iteration"] for it in rows], [it["meta_nash_conv"] for it in rows], colour=CYCLE[3])
        panels.append(ax)
    return Chart(panels, 600, 320).svg("metrics over iterations")


def sigma_plot(sigmas: Sequence[SigmaRecord], player: int) -> str | None:
    """Heatmap of sigma_k over the policies (rows) and iterations (columns); blank before a policy exists."""
    recs = [s for s in sigmas if s.player == player]
    if not recs:
        return None
    names = list(dict.fromkeys(n for s in recs for n in s.names))
    grid = [[math.nan] * len(recs) for _ in names]
    for j, s in enumerate(recs):
        for name, w in zip(s.names, s.sigma):
            grid[names.index(name)][j] = float(w)
    heat = Heatmap(grid, names, [str(s.iteration) for s in recs], BLUES, 0.0, 1.0,
                   title=f"Meta-strategy sigma (player {player})", xlabel="iteration",
                   annotate=len(names) <= ANNOTATE_MAX and len(recs) <= ANNOTATE_MAX, min_shown=0.005)
    width = max(380, 34 * len(recs) + 120 + 6 * min(LABEL_CHARS, max(len(n) for n in names)))
    return Chart([heat], width, max(170, 24 * len(names) + 90)).svg(f"sigma over iterations, player {player}")


def payoff_plot(table: PayoffTable, names: Sequence[str]) -> str | None:
    """Heatmap of the population's mean returns (row policy against column policy), annotated."""
    names = [n for n in names if any(table.has(n, o) for o in names)]
    if not names:
        return None
    grid = [[table.mean(a, b) if table.has(a, b) else math.nan for b in names] for a in names]
    bound = max((abs(v) for row in grid for v in row if not math.isnan(v)), default=0.0) or 1.0
    labels = 6 * min(LABEL_CHARS, max(len(n) for n in names))
    cells = max(220, 34 * len(names))
    heat = Heatmap(grid, names, names, RDBU, -bound, bound, title="Population payoff table (row's mean return)",
                   xlabel="opponent", ylabel="policy", annotate=len(names) <= ANNOTATE_MAX, rotate_cols=True)
    return Chart([heat], cells + labels + 100, cells + labels + 70).svg("population payoff table")


def per_opponent_plot(per_opponent: Mapping[str, float]) -> str | None:
    """Horizontal bars of the final mixture's mean return against each opponent, sorted."""
    items = sorted(((float(v), str(k)) for k, v in per_opponent.items() if v is not None), reverse=True)
    if not items:
        return None
    ax = Axes("Final mixture against each opponent", "mean return of the final mixture")
    ax.barh([name for _, name in items], [v for v, _ in items], ["#2b7bba" if v >= 0 else "#c8553d" for v, _ in items])
    return Chart([ax], 700, 19 * len(items) + 80).svg("final mixture against each opponent")


def evolution_plot(programs: Sequence[dict], title: str = "Fitness over the search") -> str | None:
    """Each evaluated program's fitness when it was made (one colour per island) and the best so
    far, in the order the programs were made (all PSRO iterations, or one discovery run)."""
    born = [(i, {**p, "fitness": (p.get("info") or {}).get("fitness_at_birth")}) for i, p in enumerate(programs)]
    scored = [(i, p) for i, p in born if p["fitness"] is not None and p.get("mutation") != "migrant"]
    if not scored:
        return None
    ax = Axes(xlabel="program (in the order made; dotted: a new PSRO iteration, sigma changed)",
              ylabel="fitness at birth")
    starts = sorted({p["iteration"] for _, p in scored})
    for it in starts[1:]:
        first = next(i for i, p in enumerate(programs) if p["iteration"] == it)
        ax.rule(x=first - 0.5, colour="#b3b3b3", dash="2 3")
    for island in sorted({p["island"] for _, p in scored}):
        pts = [(i, p["fitness"]) for i, p in scored if p["island"] == island]
        ax.scatter([x for x, _ in pts], [y for _, y in pts], label=f"island {island}")
    best, xs, ys = -math.inf, [], []
    for i, p in scored:
        best = max(best, p["fitness"])
        xs.append(i)
        ys.append(best)
    ax.line(xs, ys, label="best so far", colour="#000000", width=1.2, markers=False, step=True)
    return Chart([ax], 760, 330).svg(title)


def discovery_curves_plot(final: Mapping) -> str | None:
    """Exploitability over iterations on each game (log-log): the discovered program, bold,
    against the library's baselines; titles say whether the game was trained on or held out."""
    games = [(name, entry) for name, entry in final.get("games", {}).items()
             if any("exploitability" in c for c in entry["curves"].values())]
    if not games:
        return None
    x = final["checkpoints"]
    panels = []
    for k, (name, entry) in enumerate(games):
        ax = Axes(f"{name} ({entry['split']})", "iteration", "exploitability", xlog=True, ylog=True, title_size=10)
        curves = [(a, c) for a, c in entry["curves"].items() if "exploitability" in c]
        for algo, curve in sorted(curves, key=lambda ac: ac[0] == "discovered"):  # the discovered one on top
            y = [max(float(v), 1e-12) for v in curve["exploitability"]]
            bold = algo == "discovered"
            ax.line(x, y, label=algo if k == 0 else None, colour="#000000" if bold else None,
                    width=2.4 if bold else 1.1, markers=False)
        panels.append(ax)
    return Chart(panels, 430, 300, cols=min(3, len(panels))).svg(
        "exploitability curves of the discovered program and the baselines")
