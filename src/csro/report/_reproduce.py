"""The page of a reproduction grid (``csro reproduce``): the paper-style table and the curves.

Hennes et al. (arXiv 2603.10098) report tables of PopReturn, PopExpl and AggScore per
oracle; this page shows ours beside the reference rows measured in the same run and the
paper's published rows, and draws each metric over iterations per oracle (averaged over the
seeds), where a reader would rather look than read.
"""

from __future__ import annotations

from typing import Sequence

from csro.report._html import esc, figure, key_values, table
from csro.report._page import document
from csro.report._plots import METRICS
from csro.report._svg import CYCLE, Axes, Chart

SECTIONS = (("table", "Table"), ("curves", "Over iterations"), ("cells", "Cells"))


def curves_plot(curves: dict[str, dict]) -> str | None:
    """One panel per metric: each oracle's mean over seeds, by iteration (the legend on the first)."""
    drawn = {o: c for o, c in curves.items() if c.get("iteration")}
    if not drawn:
        return None
    panels = []
    for k, (key, name) in enumerate(METRICS):
        ax = Axes(name, "iteration", integer_x=True)
        ax.rule(y=0.0)
        for colour, (oracle, c) in zip(CYCLE * len(drawn), drawn.items()):
            ax.line(c["iteration"], [float(v) for v in c[key]], label=oracle if k == 0 else None, colour=colour)
        panels.append(ax)
    return Chart(panels, 500, 320).svg("metrics over iterations per oracle")


def reproduce_page(summary: dict, header: Sequence[str], rows: Sequence[Sequence[str]],
                   paired_header: Sequence[str] = (), paired: Sequence[Sequence[str]] = ()) -> str:
    """The self-contained HTML page of a reproduction summary: the table, the paired
    differences (model row − no-model row, by seed) where there are any, the curves, the cells."""
    facts = key_values([("experiment", esc(summary["game"])), ("LLM", esc(summary["model"])),
                        ("K (iterations)", esc(summary["iterations"])), ("seeds", esc(summary["seeds"])),
                        ("oracles", esc(", ".join(summary["oracles"])))])
    body = [f'<section id="table"><h2>Table</h2>{facts}',
            "<p>Ours: mean over seeds ± 95% Student-t interval across seeds (one seed: the run's own "
            "interval). No model, grammar frame (baseline): the same cells with evolve's search at the same "
            "budget, every rewrite drawn from the game's grammar inside the same frame, no LLM call. No model, "
            "worked example (baseline): the game's example policy as every best response, no LLM call. Sigma by "
            "author: sigma_K's weight per kind of author (model: free model code; grammar: the model's choices "
            "inside the grammar frame; frame: the grammar without a model; example; builtin; file). Measured "
            "here: the reference policies with the same evaluation population, matches and seed. Paper: Hennes "
            "et al. 2026 (bots: OpenSpiel's 43×43 table).</p>",
            table(header, [[esc(c) for c in r] for r in rows]),
            ("<h3>Paired by seed</h3><p>Each model row minus each no-model row, seed by seed: mean ± 95% "
             "Student-t interval over the seeds both finished.</p>"
             + table(paired_header, [[esc(c) for c in r] for r in paired])) if paired else "",
            "".join(f"<p>Note: {esc(n)}</p>" for n in summary.get("notes", [])), "</section>",
            '<section id="curves"><h2>Over iterations</h2>',
            figure(curves_plot(summary["curves"]), "each metric of sigma_k, averaged over the seeds",
                   "no per-iteration metrics (evaluation.every_iteration is off, or no cell finished)"),
            "</section>", '<section id="cells"><h2>Cells</h2>']
    errors = summary.get("errors") or {}
    body.append(table(["cell", "outcome"], [[esc(n), esc(e)] for n, e in errors.items()]) if errors
                else "<p>Every cell finished; each is a run directory under <code>cells/</code> with its own report.</p>")
    body.append("</section>")
    return document(f"csro reproduce {summary['game']}", "".join(body), SECTIONS)
