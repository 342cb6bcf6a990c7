"""The report of a discovery run (``kind: discover``): the best program against the library, the search.

Li et al. (arXiv 2602.16928) report discovered algorithms by their exploitability curves on
training and held-out games next to the baselines; this page shows the same from the run's
final record, then the evolutionary search (``_evolution``) and the LLM's cost.
"""

from __future__ import annotations

import yaml
from pygments import highlight
from pygments.lexers import PythonLexer

from csro.report import _evolution, _plots, _sections
from csro.report._html import details, esc, figure, fmt, key_values, pre, table
from csro.store import RunStore

SECTIONS = (("run", "Run"), ("best", "Best vs the library"), ("evolution", "Evolutionary search"),
            ("llm", "LLM cost and time"))


def body(store: RunStore) -> tuple[str, str, tuple]:
    """(title, body HTML, sections) of the discovery run in ``store``."""
    run = _sections.Run.read(store)
    cfg = run.config["discover"]
    final = run.final
    programs = store.programs()
    title = f"CSRO discovery: {cfg['target']}"
    facts = key_values([
        ("target", esc(cfg["target"])),
        ("status", "finished" if final else esc(_sections.stopped_status(run)
                                                or "in progress or interrupted (no comparison yet)")),
        ("training games", esc(cfg["train_games"])), ("held-out games", esc(cfg["test_games"])),
        ("K (iterations per fitness run)", fmt(final["k"] if final else cfg.get("iterations"))),
        ("LLM budget (calls)", fmt(cfg["budget"])),
        ("LLM", f"{esc(cfg['llm']['provider'])} / {esc(cfg['llm'].get('model'))}"),
        ("programs", fmt(len(programs))),
        ("run directory", f"<code>{esc(run.directory)}</code>"),
    ])
    parts = [f'<section id="run"><h2>Run</h2>{facts}',
             details("Configuration (YAML)", pre(yaml.safe_dump(cfg, sort_keys=False), "yaml")), "</section>",
             _best(final, programs), _evolution.section(programs, run.events), _sections.llm_cost(run)]
    return title, "".join(parts), SECTIONS


def _best(final: dict | None, programs: list[dict]) -> str:
    if not final:
        return '<section id="best"><h2>Best vs the library</h2><p class="missing">The search has not finished.</p></section>'
    algos = ["discovered", *final["baselines"]]
    rows = []
    for name, entry in final["games"].items():
        values = {a: (entry["curves"].get(a) or {}).get("exploitability", [None])[-1] for a in algos}
        finite = [v for v in values.values() if v is not None]
        low = min(finite) if finite else None
        cells = []
        for a in algos:
            v = values[a]
            if v is None:
                cells.append('<span class="err">' + esc((entry["curves"].get(a) or {}).get("error", "failed")[:80]) + "</span>")
            else:
                cells.append(f"<b>{fmt(v)}</b>" if v == low else fmt(v))
        rows.append([esc(name), esc(entry["split"]), *cells])
    best = next((p for p in programs if p["id"] == final["best"]), None)
    source = highlight(best["source"], PythonLexer(), _sections.CODE_FORMATTER) if best and best.get("source") else ""
    summary = key_values([("best program", esc(final["best"])), ("its fitness", fmt(final["fitness"])),
                          ("the seed's fitness", fmt(final["seed_fitness"])), ("stopped by", esc(final["stop"])),
                          ("LLM calls", fmt(final["llm_calls"]))])
    return ('<section id="best"><h2>Best vs the library</h2>' + summary
            + f"<h3>Exploitability after K = {fmt(final['k'])} iterations (lowest in bold)</h3>"
            + table(["game", "split", *algos], rows)
            + figure(_plots.discovery_curves_plot(final), "Exploitability over iterations; the discovered program in black.",
                     "No curve could be computed.")
            + "<h3>The best program</h3>" + source + "</section>")
