"""How a discovery run (``kind: discover``) is shown: evolved CFR hooks or PSRO meta-solvers (Li et al. 2026).

A discovery run is started with ``csro run CONFIG`` (``kind: discover``, e.g.
``configs/discover-cfr.yaml``) and continued, inspected and reported with ``csro resume / status
/ report`` (``csro.cli.run``); ``VIEW`` is how it is shown.
"""

from __future__ import annotations

import pathlib
import sys

from rich.console import Console
from rich.table import Table

from csro import events
from csro.cli._views import View
from csro.text import untrusted

out = Console(width=None if sys.stdout.isatty() else 160, emoji=False)


def event_line(step: int, kind: str, data: dict, total: int | None) -> str | None:
    """One terminal line for a discovery or search event (None: not shown)."""
    if kind == events.DISCOVER_START:
        return (f"[bold]discovering {data['target']}[/bold]: K = {data['k']}, train {', '.join(data['train'])}, "
                f"test {', '.join(data['test'])}")
    if kind == events.EVOLVE_GENERATION:
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(data["statuses"].items()))
        best = data.get("best_fitness")
        return (f"  generation {data['generation']}: {data['programs']} programs ({statuses}); "
                f"best fitness {best:.4g}" if best is not None else f"  generation {data['generation']}: {statuses}")
    if kind == events.EVOLVE_STOPPED:
        return f"  search stopped by {data['reason']} after {data['llm_calls']} LLM calls, {data['evaluations']} full evaluations"
    if kind == events.DISCOVER_COMPARE:
        return f"comparing {data['best']} with the library on {data['games']} games"
    return None


def closing(directory: pathlib.Path, report: pathlib.Path, s: dict) -> None:
    """The best program against the library on every game (the final record)."""
    from csro.store import RunStore

    with RunStore.open(directory) as store:
        final = untrusted(store.final(), markup=True)  # names and reasons, shown as text
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
    out.print(f"report: {report}")


def status_text(directory: pathlib.Path, s: dict) -> None:
    best = s["best"]
    state = "done" if s["done"] else "searching or interrupted"
    out.print(f"{directory}: discovery of {s['target']} (K = {s['k']}), {state}; {s['programs']} programs "
              f"({', '.join(f'{k} {v}' for k, v in sorted(s['statuses'].items()))}), {s['llm']['calls']} of "
              f"{s['budget']} LLM calls; best " + (f"{best['id']} (fitness {best['fitness']:.4g})" if best else "-"),
              highlight=False)
    if s["stopped"]:
        out.print(f"stopped by the LLM {s['stopped_by']}: {s['stopped']}", highlight=False)
    out.print(f"LLM: {s['llm']['retried']} calls retried, {s['llm']['waited_s']:.1f} s waiting for the provider",
              highlight=False)


VIEW = View(event_line=event_line, closing=closing, status=status_text, total=lambda s: None)
