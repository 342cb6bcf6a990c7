"""Small vector plots written as SVG text: line, band, scatter, step and bar panels, and heatmaps.

The report's plots were drawn with matplotlib; importing it and laying out four figures took
about 3 s of CPU in every ``csro`` process that ends a run (1 s import, 2 s layout and SVG
writing), where the rest of the report took 0.03 s (issue 39). The report needs a handful of
plain chart kinds, so it writes them itself (our choice; matplotlib stays for the robot and
training pages). The SVG has no script, no image, no external reference and no element id,
so several plots live in one page without collisions; text is SVG ``<text>`` in the page's
sans-serif font, every string escaped (``csro.report._html.esc``), so a policy's
name is shown, never interpreted. Layout uses an average glyph width (``CHAR_EM``), our
approximation: labels may sit a little loose, never on the data.

A plot is a ``Chart`` of panels: ``Axes`` (numeric axes, linear or log) or ``Heatmap``
(labelled cells with a colour bar). Each panel gets a box and lays out its own margins.
"""

from __future__ import annotations

import math
from typing import Sequence

from csro.report._html import esc

# The default colour cycle of matplotlib ("tab10"), so plots keep the colours readers know.
CYCLE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
         "#bcbd22", "#17becf")
# ColorBrewer's sequential Blues (9 classes) and diverging RdBu (11 classes), low to high.
BLUES = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
RDBU = ("#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3",
        "#2166ac", "#053061")
CHAR_EM = 0.58  # mean advance of a sans-serif glyph, in font sizes
FONT = 11  # tick labels and legends; titles are 12
GRID = "#dddddd"
LABEL_CHARS = 32  # longer names are shortened on axes and in legends
MISSING = "#ededed"  # a heatmap cell without a value


def short(label: str, most: int = LABEL_CHARS) -> str:
    """A label for an axis or a legend: long ones keep their head and tail around an ellipsis
    (cells and bars carry the whole name in their hover title)."""
    label = str(label)
    return label if len(label) <= most else label[:most // 2 - 1] + "…" + label[-(most - most // 2):]


def text_width(label: str, size: float = FONT) -> float:
    return len(label) * size * CHAR_EM


def number(value: float) -> str:
    """A tick label: short, no trailing zeros, powers of ten for tiny or huge magnitudes."""
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-3:
        return f"{value:.0e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")
    return f"{value:.6g}"


def nice_ticks(low: float, high: float, count: int = 5, integer: bool = False) -> list[float]:
    """Ticks at 1, 2 or 5 times a power of ten covering ``[low, high]`` (about ``count``)."""
    if not high > low:
        return [low]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    k = 0
    while first + k * step <= high + step * 1e-9:
        ticks.append(round(first + k * step, 12))
        k += 1
    return ticks


def colour(scale: Sequence[str], t: float) -> str:
    """The colour at ``t`` in [0, 1] along ``scale`` (linear in RGB between its anchors)."""
    t = min(1.0, max(0.0, t)) * (len(scale) - 1)
    i = min(int(t), len(scale) - 2)
    a, b = scale[i], scale[i + 1]
    mix = [round(int(a[j:j + 2], 16) * (1 - (t - i)) + int(b[j:j + 2], 16) * (t - i)) for j in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[j:j + 2], 16) / 255 for j in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _label(x: float, y: float, content: str, size: float = FONT, anchor: str = "middle", rotate: bool = False,
           fill: str = "#222", weight: str = "") -> str:
    turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
    bold = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{bold}{turn}'
            f' dominant-baseline="middle">{esc(content)}</text>')


def _path(points: Sequence[tuple[float, float]]) -> str:
    return "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in points)


class Axes:
    """A panel with numeric axes. Series are added in drawing order; limits follow the data."""

    def __init__(self, title: str = "", xlabel: str = "", ylabel: str = "", xlog: bool = False, ylog: bool = False,
                 integer_x: bool = False, title_size: float = 12, ylim: tuple[float, float] | None = None):
        self.title, self.xlabel, self.ylabel, self.ylim = title, xlabel, ylabel, ylim
        self.xlog, self.ylog, self.integer_x, self.title_size = xlog, ylog, integer_x, title_size
        self.series: list[dict] = []
        self.bars: tuple[list[str], list[float], list[str]] | None = None
        self._colours = 0

    def next_colour(self) -> str:
        self._colours += 1
        return CYCLE[(self._colours - 1) % len(CYCLE)]

    def line(self, xs, ys, label: str | None = None, colour: str | None = None, width: float = 1.5,
             markers: bool = True, step: bool = False, dash: str | None = None) -> None:
        """A polyline through the finite points (a gap where a value is missing); ``step``: post steps."""
        self.series.append({"kind": "line", "xs": list(xs), "ys": list(ys), "label": label, "width": width,
                            "colour": colour or self.next_colour(), "markers": markers, "step": step, "dash": dash})

    def band(self, xs, lows, highs, colour: str) -> None:
        self.series.append({"kind": "band", "xs": list(xs), "lows": list(lows), "highs": list(highs), "colour": colour})

    def scatter(self, xs, ys, label: str | None = None, colour: str | None = None, cross: bool = False) -> None:
        """Points as dots, or as crosses (``cross``)."""
        self.series.append({"kind": "scatter", "xs": list(xs), "ys": list(ys), "label": label,
                            "colour": colour or self.next_colour(), "cross": cross})

    def rule(self, x: float | None = None, y: float | None = None, colour: str = "#999", dash: str | None = None) -> None:
        """A vertical (``x``) or horizontal (``y``) reference line across the panel."""
        self.series.append({"kind": "rule", "x": x, "y": y, "colour": colour, "dash": dash})

    def barh(self, labels: Sequence[str], values: Sequence[float], colours: Sequence[str]) -> None:
        """Horizontal bars, the first label on top; the value axis is x."""
        self.bars = (list(labels), [float(v) for v in values], list(colours))

    # -- layout -----------------------------------------------------------------------------

    def _finite(self, values, log: bool) -> list[float]:
        return [float(v) for v in values if v is not None and math.isfinite(float(v)) and (not log or float(v) > 0)]

    def _limits(self) -> tuple[tuple[float, float], tuple[float, float]]:
        xs, ys = [], []
        for s in self.series:
            if s["kind"] == "rule":
                (xs if s["x"] is not None else ys).append(s["x"] if s["x"] is not None else s["y"])
                continue
            xs += s["xs"]
            ys += s["ys"] if "ys" in s else s["lows"] + s["highs"]
        if self.bars:
            xs += self.bars[1] + [0.0]
        y_span = self.ylim or self._span(self._finite(ys, self.ylog), self.ylog)
        return self._span(self._finite(xs, self.xlog), self.xlog), y_span

    @staticmethod
    def _span(values: list[float], log: bool) -> tuple[float, float]:
        if not values:
            return (1.0, 10.0) if log else (0.0, 1.0)
        low, high = min(values), max(values)
        if log:
            low, high = math.log10(low), math.log10(high)
        pad = (high - low) * 0.05 or (0.5 if not log else 0.5)
        return low - pad, high + pad

    def _ticks(self, span: tuple[float, float], log: bool, integer: bool) -> list[tuple[float, str]]:
        low, high = span
        if log:
            decades = range(math.ceil(low), math.floor(high) + 1)
            step = max(1, math.ceil(len(decades) / 6))
            return [(float(d), number(10.0 ** d)) for d in decades if d % step == 0] or [(low, number(10 ** low))]
        return [(t, number(t)) for t in nice_ticks(low, high, 5, integer)]

    def render(self, x0: float, y0: float, width: float, height: float) -> list[str]:
        (xl, xh), (yl, yh) = self._limits()
        if self.bars:
            names = self.bars[0]
            yl, yh = -0.5, len(names) - 0.5
            yticks = [(float(i), short(n)) for i, n in enumerate(names)]
            ytick_size = 9
        else:
            yticks, ytick_size = self._ticks((yl, yh), self.ylog, False), FONT
        xticks = self._ticks((xl, xh), self.xlog, self.integer_x)
        legend = [s for s in self.series if s.get("label")]
        legend_w = max((text_width(short(s["label"]), 10) for s in legend), default=-24) + 34
        left = max((text_width(t, ytick_size) for _, t in yticks), default=0) + 12 + (18 if self.ylabel else 0)
        top, bottom = (24 if self.title else 8), 22 + (18 if self.xlabel else 0)
        px0, py0 = x0 + left, y0 + top
        pw, ph = max(20.0, width - left - legend_w - 8), max(20.0, height - top - bottom)

        def X(v: float) -> float:
            v = math.log10(v) if self.xlog and not self.bars else v
            return px0 + (v - xl) / (xh - xl) * pw

        def Y(v: float) -> float:
            if self.bars:
                return py0 + (v - yl) / (yh - yl) * ph
            v = math.log10(v) if self.ylog else v
            return py0 + (yh - v) / (yh - yl) * ph

        def tick_x(t: float) -> float:
            return px0 + (t - xl) / (xh - xl) * pw

        def tick_y(t: float) -> float:
            return py0 + ((t - yl) if self.bars else (yh - t)) / (yh - yl) * ph

        out = [f'<rect x="{px0:.1f}" y="{py0:.1f}" width="{pw:.1f}" height="{ph:.1f}" fill="none" stroke="#444"/>']
        for t, label in xticks:
            x = tick_x(t)
            out.append(f'<path d="M{x:.1f},{py0:.1f}V{py0 + ph:.1f}" stroke="{GRID}"/>')
            out.append(_label(x, py0 + ph + 11, label))
        for t, label in yticks:
            y = tick_y(t)
            if not self.bars:
                out.append(f'<path d="M{px0:.1f},{y:.1f}H{px0 + pw:.1f}" stroke="{GRID}"/>')
            out.append(_label(px0 - 5, y, label, size=ytick_size, anchor="end"))
        if self.bars:
            names, values, colours = self.bars
            for i, (name, value, fill) in enumerate(zip(names, values, colours)):
                a, b = sorted((X(0.0), X(value)))
                out.append(f'<rect x="{a:.1f}" y="{Y(i - 0.4):.1f}" width="{max(b - a, 0.5):.1f}" '
                           f'height="{Y(i + 0.4) - Y(i - 0.4):.1f}" fill="{fill}"><title>{esc(name)}: '
                           f'{number(value)}</title></rect>')
            out.append(f'<path d="M{X(0.0):.1f},{py0:.1f}V{py0 + ph:.1f}" stroke="#666"/>')
        for s in self.series:
            out += self._draw(s, X, Y, (px0, py0, pw, ph), (xl, xh, yl, yh))
        if self.title:
            out.append(_label(px0 + pw / 2, y0 + 11, self.title, size=self.title_size, weight="bold"))
        if self.xlabel:
            out.append(_label(px0 + pw / 2, py0 + ph + 30, self.xlabel))
        if self.ylabel:
            out.append(_label(x0 + 9, py0 + ph / 2, self.ylabel, rotate=True))
        for i, s in enumerate(legend):
            ly, lx = py0 + 8 + 16 * i, px0 + pw + 10
            out.append(f'<path d="M{lx:.1f},{ly:.1f}h18" stroke="{s["colour"]}" stroke-width="2.5"/>')
            out.append(_label(lx + 23, ly, short(s["label"]), size=10, anchor="start"))
        return out

    def _draw(self, s: dict, X, Y, box, limits) -> list[str]:
        px0, py0, pw, ph = box
        xl, xh, yl, yh = limits
        dash = f' stroke-dasharray="{s["dash"]}"' if s.get("dash") else ""
        if s["kind"] == "rule":
            if s["x"] is not None:
                return [f'<path d="M{X(s["x"]):.1f},{py0:.1f}V{py0 + ph:.1f}" stroke="{s["colour"]}"{dash}/>']
            return [f'<path d="M{px0:.1f},{Y(s["y"]):.1f}H{px0 + pw:.1f}" stroke="{s["colour"]}"{dash}/>']
        if s["kind"] == "band":
            rows = [(x, lo, hi) for x, lo, hi in zip(s["xs"], s["lows"], s["highs"])
                    if all(v is not None and math.isfinite(v) for v in (x, lo, hi))]
            if not rows:
                return []
            edge = [(X(x), Y(hi)) for x, _, hi in rows] + [(X(x), Y(lo)) for x, lo, _ in reversed(rows)]
            return [f'<path d="{_path(edge)}Z" fill="{s["colour"]}" fill-opacity="0.2" stroke="none"/>']
        points = [(X(x), Y(y)) for x, y in zip(s["xs"], s["ys"])
                  if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
                  and (not self.xlog or x > 0) and (not self.ylog or y > 0)]
        if s["kind"] == "scatter" and s["cross"]:
            return [f'<path d="M{x - 3:.1f},{y - 3:.1f}l6,6m0,-6l-6,6" stroke="{s["colour"]}" stroke-width="1.5"/>'
                    for x, y in points]
        if s["kind"] == "scatter":
            return [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.6" fill="{s["colour"]}" fill-opacity="0.75"/>'
                    for x, y in points]
        if not points:
            return []
        if s["step"]:
            d = f"M{points[0][0]:.1f},{points[0][1]:.1f}" + "".join(
                f"H{x:.1f}V{y:.1f}" for x, y in points[1:])
        else:
            d = _path(points)
        out = [f'<path d="{d}" fill="none" stroke="{s["colour"]}" stroke-width="{s["width"]}"{dash}/>']
        if s["markers"]:
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.2" fill="{s["colour"]}"/>' for x, y in points]
        return out


class Heatmap:
    """Labelled cells (row 0 on top), a value's colour from ``scale`` between ``low`` and
    ``high``, values written in cells when ``annotate``, and a colour bar on the right."""

    def __init__(self, grid: Sequence[Sequence[float]], rows: Sequence[str], cols: Sequence[str],
                 scale: Sequence[str], low: float, high: float, title: str = "", xlabel: str = "",
                 ylabel: str = "", annotate: bool = True, rotate_cols: bool = False, min_shown: float | None = None):
        self.grid, self.rows, self.cols = grid, list(rows), list(cols)
        self.scale, self.low, self.high = scale, low, high
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.annotate, self.rotate_cols, self.min_shown = annotate, rotate_cols, min_shown

    def render(self, x0: float, y0: float, width: float, height: float) -> list[str]:
        col_room = max((text_width(short(c), 9) for c in self.cols), default=0) if self.rotate_cols else 12
        left = max((text_width(short(r), 9) for r in self.rows), default=0) + 10 + (18 if self.ylabel else 0)
        top, bottom, bar = (24 if self.title else 6), col_room + 8 + (18 if self.xlabel else 0), 62
        px0, py0 = x0 + left, y0 + top
        pw, ph = max(20.0, width - left - bar), max(20.0, height - top - bottom)
        cw, ch = pw / max(1, len(self.cols)), ph / max(1, len(self.rows))
        out = [f'<rect x="{px0:.1f}" y="{py0:.1f}" width="{pw:.1f}" height="{ph:.1f}" fill="{MISSING}"/>']
        span = (self.high - self.low) or 1.0
        for i, row in enumerate(self.grid):
            for j, value in enumerate(row):
                if value is None or not math.isfinite(value):
                    continue
                fill = colour(self.scale, (value - self.low) / span)
                x, y = px0 + j * cw, py0 + i * ch
                out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cw:.1f}" height="{ch:.1f}" fill="{fill}" '
                           f'stroke="#fff" stroke-width="0.5"><title>{esc(self.rows[i])} / {esc(self.cols[j])}: '
                           f'{value:.4g}</title></rect>')
                if self.annotate and (self.min_shown is None or value >= self.min_shown):
                    ink = "#fff" if luminance(fill) < 0.45 else "#000"
                    out.append(_label(x + cw / 2, y + ch / 2, f"{value:.2f}", size=min(9.0, ch * 0.55), fill=ink))
        for i, name in enumerate(self.rows):
            out.append(_label(px0 - 5, py0 + (i + 0.5) * ch, short(name), size=9, anchor="end"))
        for j, name in enumerate(self.cols):
            x = px0 + (j + 0.5) * cw
            if self.rotate_cols:
                out.append(_label(x, py0 + ph + 5, short(name), size=9, anchor="end", rotate=True))
            else:
                out.append(_label(x, py0 + ph + 10, short(name), size=9))
        if self.title:
            out.append(_label(px0 + pw / 2, y0 + 11, self.title, size=12, weight="bold"))
        if self.xlabel:
            out.append(_label(px0 + pw / 2, py0 + ph + col_room + 18, self.xlabel))
        if self.ylabel:
            out.append(_label(x0 + 9, py0 + ph / 2, self.ylabel, rotate=True))
        out += self._colour_bar(px0 + pw + 12, py0, ph)
        return out

    def _colour_bar(self, x: float, y: float, height: float, steps: int = 48) -> list[str]:
        out = []
        for k in range(steps):  # top is high
            t = 1 - (k + 0.5) / steps
            out.append(f'<rect x="{x:.1f}" y="{y + k * height / steps:.2f}" width="12" '
                       f'height="{height / steps + 0.3:.2f}" fill="{colour(self.scale, t)}"/>')
        out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="12" height="{height:.1f}" fill="none" stroke="#444"/>')
        span = (self.high - self.low) or 1.0
        for t in nice_ticks(self.low, self.high, 4):
            ty = y + (self.high - t) / span * height
            out.append(f'<path d="M{x + 12:.1f},{ty:.1f}h3" stroke="#444"/>')
            out.append(_label(x + 17, ty, number(t), size=9, anchor="start"))
        return out


class Chart:
    """Panels in a grid of ``cols`` columns, each ``panel_width`` by ``panel_height`` pixels."""

    def __init__(self, panels: Sequence[Axes | Heatmap], panel_width: float, panel_height: float, cols: int = 0):
        self.panels = list(panels)
        self.cols = cols or len(self.panels)
        self.panel_width, self.panel_height = panel_width, panel_height

    def svg(self, title: str) -> str:
        """An ``<svg>`` element (its ``aria-label`` the title) of fixed size that scales to its box."""
        rows = -(-len(self.panels) // self.cols)
        width, height = self.cols * self.panel_width, rows * self.panel_height
        body = []
        for k, panel in enumerate(self.panels):
            body += panel.render((k % self.cols) * self.panel_width, (k // self.cols) * self.panel_height,
                                 self.panel_width, self.panel_height)
        return (f'<svg role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg" '
                f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
                f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"><title>{esc(title)}</title>'
                f'<rect width="100%" height="100%" fill="#fff"/>' + "".join(body) + "</svg>")
