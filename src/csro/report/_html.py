"""Small HTML builders for the report. Every piece of run data passes through ``esc``."""

from __future__ import annotations

import html
import json
import numbers
from typing import Any, Iterable, Mapping, Sequence

from csro.text import untrusted


def esc(value: Any) -> str:
    """Text (of any value) escaped for HTML element content and quoted attributes, its
    invisible and control characters shown (``csro.text.untrusted``)."""
    return html.escape(untrusted(str(value)), quote=True)


def fmt(value: Any, digits: int = 4) -> str:
    """A number for display (``—`` for a missing one); other values as escaped text."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        return esc(value)
    if isinstance(value, numbers.Integral):
        return str(value)
    return f"{float(value):.{digits}g}"


def with_ci(value: Any, ci: Any) -> str:
    """``value ± ci`` (just the value when there is no interval)."""
    return fmt(value) if ci is None or value is None else f"{fmt(value)} <span class=ci>± {fmt(ci, 2)}</span>"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table whose header cells are escaped here and whose body cells are HTML already."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def key_values(pairs: Iterable[tuple[str, str]]) -> str:
    """A two-column table of (escaped label, HTML value)."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def pre(text: str, cls: str = "") -> str:
    return f'<pre class="{cls}">{esc(text)}</pre>'


def json_block(value: Any) -> str:
    """Pretty JSON of ``value`` in an escaped ``<pre>``."""
    return pre(json.dumps(value, indent=2, ensure_ascii=False, default=str), "json")


def details(summary: str, body: str, open_: bool = False) -> str:
    """A collapsible block; ``summary`` and ``body`` are HTML already."""
    return f"<details{' open' if open_ else ''}><summary>{summary}</summary>{body}</details>"


def policy_link(name: str, known: set[str]) -> str:
    """A link to a policy's section, or plain text for a name that is not a stored policy."""
    if name in known:
        return f'<a href="#policy-{esc(name)}">{esc(name)}</a>'
    return esc(name)


def weights_table(weights: Mapping[str, Any], known: set[str], authors: Mapping[str, str]) -> str:
    """Names, their authors (``csro.authorship``) and weights, heaviest first."""
    rows = sorted(weights.items(), key=lambda kv: -float(kv[1]) if isinstance(kv[1], numbers.Number) else 0.0)
    return table(["policy", "author", "weight"],
                 ([policy_link(k, known), esc(authors.get(k, "?")), fmt(v)] for k, v in rows), "narrow")


def figure(svg: str | None, caption: str, missing: str) -> str:
    """A plot with its caption, or a note saying why it is absent."""
    if svg is None:
        return f'<p class="missing">{esc(missing)}</p>'
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"
