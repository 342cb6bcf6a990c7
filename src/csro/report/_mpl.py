"""A matplotlib figure as inline SVG, for the pages that still draw with matplotlib (the
training reports; the run and robot reports write their SVG themselves, ``csro.report._svg``).

Text is drawn as paths, so the SVG needs no font and no network. Each plot's element ids get
a unique prefix so several SVGs can live in one HTML document without their ids (glyphs,
clip paths) colliding. matplotlib is imported by the caller that built the figure, not here.
"""

from __future__ import annotations

import html
import io
import re


def to_svg(fig, label: str, title: str) -> str:
    """The figure as an ``<svg>`` element whose ids are prefixed with ``label``."""
    import matplotlib

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
