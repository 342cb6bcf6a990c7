"""The report's evolutionary-search section: islands, lineage, fitness over time, every program.

Read from the run store's ``programs`` table (``csro.oracles.evolve``); shown for CSRO runs
with ``oracle.kind: evolve`` and for discovery runs. Fitness is the value stored
last for a program (its fitness at birth, or after the archive was re-scored for a new sigma).
"""

from __future__ import annotations

import collections
from typing import Sequence

from pygments import highlight
from pygments.lexers import PythonLexer

from csro.events import EVOLVE_RESCORED, EVOLVE_STOPPED
from csro.report import _plots
from csro.report._html import details, esc, figure, fmt, key_values, pre, table
from csro.report._sections import CODE_FORMATTER


def section(programs: Sequence[dict], events: Sequence[dict]) -> str:
    """The whole section ("" when the run has no evolutionary search)."""
    if not programs:
        return ""
    parts = ['<section id="evolution"><h2>Evolutionary search</h2>',
             key_values([("programs", fmt(len(programs))),
                         ("outcomes", esc(", ".join(f"{k}: {v}" for k, v in sorted(collections.Counter(p["status"] for p in programs).items())))),
                         ("stopped by", esc(", ".join(sorted({e["data"]["reason"] for e in events if e["kind"] == EVOLVE_STOPPED})) or "—"))]),
             figure(_plots.evolution_plot(programs), "Fitness of each program when it was made, by island; the line is the best so far.",
                    "No program was fully evaluated."),
             "<h3>Islands</h3>", islands_table(programs),
             "<h3>Lineage of the best program</h3>", lineage(programs),
             details("Every program (status, parent, fitness, error)", programs_table(programs))]
    rescored = [e for e in events if e["kind"] == EVOLVE_RESCORED]
    if rescored:
        parts.append("<h3>Re-scoring when sigma changed</h3>")
        parts.append(table(["iteration", "programs re-scored (no simulation)", "elites carried", "cells simulated"],
                           ([fmt(e["iteration"]), fmt(e["data"]["programs"]), fmt(e["data"]["elites"]),
                             fmt(e["data"]["cells_simulated"])] for e in rescored)))
    parts.append("</section>")
    return "".join(parts)


def islands_table(programs: Sequence[dict]) -> str:
    rows = []
    by = collections.defaultdict(list)
    for p in programs:
        by[(p["iteration"], p["island"])].append(p)
    for (iteration, island), group in sorted(by.items()):
        scored = [p for p in group if p.get("fitness") is not None]
        best = max(scored, key=lambda p: p["fitness"], default=None)
        cells = {tuple(p.get("descriptor") or ()) for p in scored}
        rows.append([fmt(iteration), fmt(island), fmt(len(group)),
                     fmt(sum(p["status"] in ("ok", "not_promising") for p in group)),
                     fmt(sum(p["mutation"] == "migrant" for p in group)), fmt(len(cells)),
                     fmt(best["fitness"]) if best else "—", esc(best["id"]) if best else "—"])
    return table(["iteration", "island", "programs", "valid", "migrants in", "cells filled", "best fitness", "best"], rows)


def lineage(programs: Sequence[dict]) -> str:
    by_id = {p["id"]: p for p in programs}
    scored = [p for p in programs if p.get("fitness") is not None]
    if not scored:
        return '<p class="missing">No program was fully evaluated.</p>'
    chain, p = [], max(scored, key=lambda p: p["fitness"])
    while p is not None and p["id"] not in {c["id"] for c in chain}:
        chain.append(p)
        p = by_id.get(p.get("parent"))
    blocks = []
    for p in reversed(chain):
        head = (f'<h4>{esc(p["id"])} <span class="tag">{esc(p["mutation"])}</span> '
                f'fitness {fmt(p.get("fitness"))}</h4>')
        body = ""
        if p.get("diff"):
            body += details("the diff the LLM wrote", pre(p["diff"], "diff"))
        if p.get("source"):
            body += details("source", highlight(p["source"], PythonLexer(), CODE_FORMATTER))
        if p.get("scores"):
            body += details("scores", table(["component", "value"], ([esc(k), fmt(v)] for k, v in sorted(p["scores"].items()))))
        blocks.append(head + body)
    return "".join(blocks)


def programs_table(programs: Sequence[dict]) -> str:
    rows = ([esc(p["id"]), fmt(p["iteration"]), fmt(p["generation"]), fmt(p["island"]), esc(p["mutation"]),
             esc(p["status"]), esc(p.get("parent") or "—"), fmt(p.get("fitness")), esc((p.get("error") or "")[:160])]
            for p in programs)
    return table(["id", "iteration", "generation", "island", "mutation", "status", "parent", "fitness", "error"], rows)

