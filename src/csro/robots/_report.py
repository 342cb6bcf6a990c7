"""The HTML report of an AOR run (``DIR/report.html``), built from its store only.

One self-contained page (inline CSS and SVG, key frames as PNG data URIs, no scripts; a
Content-Security-Policy allows nothing else): the run, success over rounds, and for every
round its controller — diagnosis, diff against its parent, highlighted source, episode
outcomes, key frames — and the LLM exchanges that wrote it. Built with the helpers of
``csro.report``; every string from the store is escaped (LLM-written text is shown, never
interpreted). The layout is ours; the AOR paper (Kumar, arXiv 2603.04466) has no report.
"""

from __future__ import annotations

import base64
import difflib
import os
import pathlib

from pygments import highlight
from pygments.lexers import PythonLexer

from csro.report import (CODE_FORMATTER, CSS, Axes, Chart, details, esc, fmt, key_values, llm_exchange, pre, table,
                         write_atomically)

from ._store import AorStore, ControllerRecord

REPORT_NAME = "report.html"
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
EXTRA_CSS = """
.diff { font: 0.8rem/1.35 ui-monospace, monospace; }
.diff .add { background: #e6ffec; } .diff .del { background: #ffebe9; } .diff .hunk { color: #6639ba; }
.frames { display: flex; flex-wrap: wrap; gap: 0.6rem; } .frames figure { margin: 0; }
.frames img { border: 1px solid var(--line); image-rendering: pixelated; }
.ok { color: #1a7f37; font-weight: 600; }
"""


def _success_plot(rounds: list[dict]) -> str | None:
    if not rounds:
        return None
    ax = Axes(xlabel="round", ylabel="success rate", integer_x=True, ylim=(-0.05, 1.05))
    xs = [r["round"] for r in rounds]
    own = [r["summary"]["success_rate"] if r.get("summary") else None for r in rounds]
    ax.line(xs, [r.get("best_success_rate") or 0.0 for r in rounds], label="best so far", colour="#2b6cb0",
            markers=False, step=True)
    ax.scatter([x for x, y in zip(xs, own) if y is not None], [y for y in own if y is not None],
               label="this round's controller", colour="#1a7f37")
    rejected = [x for x, r in zip(xs, rounds) if not r.get("valid")]
    if rejected:
        ax.scatter(rejected, [0.0] * len(rejected), label="rejected rewrite", colour="#b42318", cross=True)
    return Chart([ax], 700, 280).svg("success over rounds")


def _diff(parent: str | None, source: str | None) -> str:
    if not parent or not source:
        return '<p class="missing">No parent to compare with.</p>'
    lines = []
    for line in difflib.unified_diff(parent.splitlines(), source.splitlines(), "parent", "this", lineterm=""):
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else \
            "hunk" if line.startswith("@@") else ""
        lines.append(f'<span class="{cls}">{esc(line)}</span>')
    return f'<pre class="diff">{chr(10).join(lines)}</pre>' if lines else '<p class="missing">Identical to its parent.</p>'


def _frames(store: AorStore, cid: str, episodes: dict[int, dict]) -> str:
    parts = []
    for i in sorted(episodes):
        shots = store.frames(cid, i)
        if not shots:
            continue
        figs = "".join(
            f'<figure><img alt="{esc(cid)} episode {i} step {f.step}: {esc(f.label)}" '
            f'src="data:image/png;base64,{base64.b64encode(f.png).decode()}">'
            f"<figcaption>step {f.step}: {esc(f.label)}</figcaption></figure>" for f in shots)
        parts.append(f"<h4>Key frames, episode {i}</h4><div class=\"frames\">{figs}</div>")
    return "".join(parts)


def _episodes(episodes: dict[int, dict]) -> str:
    rows = []
    for i, o in sorted(episodes.items()):
        stopped = o["progress_stopped"]
        rows.append([str(i), '<span class="ok">yes</span>' if o["success"] else "no", esc(o["end"]), fmt(o["steps"]),
                     fmt(o["progress"]), fmt(o["min_distance"]), "yes" if o["oscillation"] else "no",
                     esc(" → ".join(p for _, p in o["phases"])), f"{stopped['step']} ({esc(stopped['phase'])})",
                     esc(o.get("detail", "")[:200])])
    return table(["episode", "success", "end", "steps", "progress", "min dist (m)", "oscillation", "phases",
                  "progress stopped", "error"], rows)


def _controller(store: AorStore, c: ControllerRecord, sources: dict[str, str | None], calls: dict) -> str:
    episodes = store.episodes(c.id) if c.valid else {}
    rate = sum(o["success"] for o in episodes.values()) / len(episodes) if episodes else None
    status = (f'<span class="ok">valid</span>, success {fmt(rate)} over {len(episodes)} episodes' if c.valid
              else f'<span class="err">rejected</span>: {esc((c.error or "")[:300])}')
    parts = [f"<h3>{esc(c.id)} <span class=tag>round {c.round}</span></h3>",
             key_values([("status", status), ("parent", esc(c.parent or "—")), ("sha256", esc((c.sha256 or "—")[:16]))])]
    parts.append("<h4>Diagnosis</h4>" + (pre(c.diagnosis) if c.diagnosis else '<p class="missing">None given.</p>'))
    parts.append("<h4>Diff against its parent</h4>" + _diff(sources.get(c.parent or ""), c.source))
    if c.source:
        parts.append(details("Source", highlight(c.source, PythonLexer(), CODE_FORMATTER)))
    if episodes:
        parts.append("<h4>Episodes</h4>" + _episodes(episodes) + _frames(store, c.id, episodes))
    if c.call_keys:
        parts.append("<h4>LLM exchanges</h4>" + "".join(llm_exchange(k, calls.get(k)) for k in c.call_keys))
    return f'<article class="policy" id="controller-{esc(c.id)}">{"".join(parts)}</article>'


def build_aor_html(store: AorStore) -> str:
    config, final, rounds = store.config(), store.final(), store.rounds()
    controllers = store.controllers()
    sources = {c.id: c.source for c in controllers}
    calls = {str(q.key): (q, r) for q, r in store.llm_calls()}
    llm = config.get("llm") or {}
    used = sorted({f"{r.provider} / {r.model}" for _, r in calls.values()})
    head = key_values([
        ("task", esc(config.get("task"))), ("rounds", fmt(config.get("rounds"))),
        ("episodes per controller", fmt(config.get("episodes"))), ("horizon", fmt(config.get("horizon"))),
        ("seed", fmt(config.get("seed"))), ("LLM", esc(", ".join(used) or f"{llm.get('provider')} (no call made)")),
        ("LLM calls", fmt(len(calls))), ("state", "finished" if final else f"{len(rounds)} round(s) done, unfinished"),
        ("best", esc(final.get("best")) if final else "—"),
        ("best success rate", fmt(final.get("success_rate")) if final else "—")])
    svg = _success_plot(rounds)
    plot = f"<figure>{svg}<figcaption>success rate of each round's controller and of the best so far</figcaption></figure>" \
        if svg else '<p class="missing">No round finished yet.</p>'
    body = "".join(_controller(store, c, sources, calls) for c in controllers)
    title = f"AOR run: {esc(config.get('task', '?'))}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>{title}</title><style>{CSS}{EXTRA_CSS}{CODE_FORMATTER.get_style_defs('.highlight')}</style>"
            f"</head><body><main><header class=\"top\"><h1>{title}</h1></header>"
            f"<h2>Run</h2>{head}<h2>Success over rounds</h2>{plot}<h2>Controllers</h2>{body}</main></body></html>\n")


def write_aor_report(directory: str | os.PathLike) -> pathlib.Path:
    """Write ``DIR/report.html`` from the AOR store of ``DIR`` (atomically); returns its path."""
    with AorStore.open(directory) as store:
        text = build_aor_html(store)
    return write_atomically(pathlib.Path(directory) / REPORT_NAME, text)
