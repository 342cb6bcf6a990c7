"""The report page: the sections of a run joined into one self-contained HTML document.

The page loads nothing (inline CSS and SVG, no scripts, no fonts, no network) and says so
to the browser with a Content-Security-Policy that forbids every other source: even a
mistake in escaping could not run a script or fetch a resource.
"""

from __future__ import annotations

import os
import pathlib

from csro.report import _discovery, _evolution, _sections
from csro.report._html import esc
from csro.store import RunStore

REPORT_NAME = "report.html"

CSS = """
:root { --fg: #1d2430; --muted: #5b6472; --line: #dde1e7; --accent: #2b6cb0; --bg-soft: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1150px; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
header.top { border-bottom: 1px solid var(--line); margin-bottom: 1rem; }
h1 { font-size: 1.7rem; margin: 0.2rem 0; }
h2 { font-size: 1.35rem; border-bottom: 2px solid var(--line); padding-bottom: 0.2rem; margin-top: 2.2rem; }
h3 { font-size: 1.1rem; margin: 1.4rem 0 0.5rem; }
h4 { font-size: 0.95rem; margin: 1rem 0 0.3rem; color: var(--muted); }
nav a { margin-right: 1rem; }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border: 1px solid var(--line); padding: 0.25rem 0.55rem; text-align: left; vertical-align: top; }
thead th { background: var(--bg-soft); }
table.kv th { background: var(--bg-soft); font-weight: 600; white-space: nowrap; }
td { font-variant-numeric: tabular-nums; }
.ci { color: var(--muted); }
.missing { color: var(--muted); font-style: italic; }
.err { color: #b42318; font-weight: 600; }
.tag { font-size: 0.75rem; font-weight: 600; background: #e8f0fb; color: var(--accent); border-radius: 4px;
       padding: 0.1rem 0.4rem; vertical-align: middle; }
pre { background: var(--bg-soft); border: 1px solid var(--line); border-radius: 4px; padding: 0.6rem;
      overflow: auto; max-height: 32em; font-size: 0.82rem; white-space: pre-wrap; word-break: break-word; }
.highlight pre { white-space: pre; }
details { margin: 0.4rem 0; } summary { cursor: pointer; color: var(--muted); }
details.llm { border-left: 3px solid var(--line); padding-left: 0.6rem; }
.msg .role { font-size: 0.75rem; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); }
.msg.reply pre { border-color: #b6d4f2; }
article.policy { border: 1px solid var(--line); border-radius: 6px; padding: 0.2rem 1rem 0.8rem; margin: 1rem 0; }
article.policy:target { border-color: var(--accent); box-shadow: 0 0 0 2px #c9dcf3; }
figure { margin: 1.2rem 0; } figcaption { color: var(--muted); font-size: 0.85rem; }
svg { max-width: 100%; height: auto; }
"""

SECTIONS = (("run", "Run"), ("final", "Final metrics"), ("plots", "Plots"), ("policies", "Policies"),
            ("llm", "LLM cost and time"))


def build_html(store: RunStore) -> str:
    """The report of the run in ``store`` as one HTML document."""
    if "discover" in store.config():
        title, body, sections = _discovery.body(store)
    else:
        title, body, sections = _csro_body(store)
    return document(title, body, sections)


def document(title: str, body: str, sections: tuple) -> str:
    """The self-contained page: ``body`` (HTML) under ``title`` with a link to each of ``sections``."""
    nav = "".join(f'<a href="#{key}">{esc(name)}</a>' for key, name in sections)
    styles = CSS + _sections.CODE_FORMATTER.get_style_defs(".highlight")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{styles}</style></head><body><main>"
            f'<header class="top"><h1>{esc(title)}</h1><nav>{nav}</nav></header>{body}'
            "</main></body></html>\n")


def _csro_body(store: RunStore) -> tuple[str, str, tuple]:
    """(title, body HTML, sections) of a CSRO run."""
    run = _sections.Run.read(store)
    evolution = _evolution.section(store.programs(), run.events)
    body = "".join(build(run) for build in (_sections.header, _sections.final_metrics, _sections.plots))
    body += evolution + "".join(build(run) for build in (_sections.policies, _sections.llm_cost))
    sections = SECTIONS[:3] + ((("evolution", "Evolutionary search"),) if evolution else ()) + SECTIONS[3:]
    return f"CSRO run: {run.config.get('game', '?')}", body, sections


def write_report(directory: str | os.PathLike) -> pathlib.Path:
    """Write ``DIR/report.html`` from the run store of ``DIR``; returns its path.

    The file is replaced atomically, so a reader never sees half a report.
    """
    with RunStore.open(directory) as store:
        text = build_html(store)
    return write_atomically(pathlib.Path(directory) / REPORT_NAME, text)


def write_atomically(path: pathlib.Path, text: str) -> pathlib.Path:
    """Write ``text`` to ``path`` through a temporary file and a rename; returns ``path``."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return path
