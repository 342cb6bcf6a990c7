"""The report's own SVG plots (``csro.report._svg``): ticks, colours, escaping, and that
what they draw lands where the data says."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

from csro.report._svg import BLUES, RDBU, Axes, Chart, Heatmap, colour, nice_ticks, number, short

NS = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # well-formed XML, or this raises


def test_nice_ticks_cover_the_range_in_steps_of_1_2_or_5():
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-207.9, 194.0) == [-200, -100, 0, 100]
    assert nice_ticks(0, 3, integer=True) == [0, 1, 2, 3]
    assert nice_ticks(0.5, 2.5, integer=True) == [1, 2]
    assert nice_ticks(4.0, 4.0) == [4.0]
    for low, high in ((-3.3, 17.0), (1e-4, 3e-4), (12345, 67890)):
        ticks = nice_ticks(low, high)
        steps = {round(b - a, 12) for a, b in zip(ticks, ticks[1:])}
        assert len(steps) == 1 and low <= ticks[0] and ticks[-1] <= high
        assert float(f"{steps.pop():.1e}".split("e")[0]) in (1.0, 2.0, 5.0)


def test_tick_labels_are_short():
    assert [number(v) for v in (0, 0.2, 100.0, -0.4, 1e-6, 2e6, 12.5)] == ["0", "0.2", "100", "-0.4", "1e-6", "2e6",
                                                                            "12.5"]


def test_colour_scales_run_from_their_first_to_their_last_anchor():
    assert colour(BLUES, 0.0) == BLUES[0] and colour(BLUES, 1.0) == BLUES[-1]
    assert colour(RDBU, 0.5) == RDBU[5]  # the diverging scale's white middle at zero
    assert colour(BLUES, -3) == BLUES[0] and colour(BLUES, 7) == BLUES[-1]


def test_a_line_is_drawn_through_its_points_in_data_order_with_a_gap_for_missing_values():
    ax = Axes("t", "x", "y")
    ax.line([0, 1, 2, 3], [0.0, 1.0, math.nan, 3.0], label="a")
    root = parse(Chart([ax], 400, 300).svg("a line"))
    line = next(p for p in root.iter(NS + "path") if p.get("stroke") == "#1f77b4" and p.get("fill") == "none")
    points = [tuple(map(float, xy.split(","))) for xy in re.split("[ML]", line.get("d"))[1:]]
    assert len(points) == 3  # the NaN point is left out
    xs, ys = zip(*points)
    assert xs == tuple(sorted(xs)) and ys[0] > ys[1] > ys[2]  # higher values are higher on the page
    assert root.get("aria-label") == "a line" and root.find(NS + "title").text == "a line"


def test_log_axes_place_decades_evenly():
    ax = Axes(xlog=True, ylog=True)
    ax.line([1, 10, 100, 1000], [1.0, 0.1, 0.01, 0.001], markers=False)
    root = parse(Chart([ax], 500, 300).svg("log"))
    line = next(p for p in root.iter(NS + "path") if p.get("fill") == "none" and p.get("stroke") == "#1f77b4")
    points = [tuple(map(float, xy.split(","))) for xy in re.split("[ML]", line.get("d"))[1:]]
    dx = [b[0] - a[0] for a, b in zip(points, points[1:])]
    dy = [b[1] - a[1] for a, b in zip(points, points[1:])]
    assert max(dx) - min(dx) < 0.3 and max(dy) - min(dy) < 0.3 and dy[0] > 0
    labels = {t.text for t in root.iter(NS + "text")}
    assert {"1", "10", "100", "1000"} <= labels


def test_a_heatmap_colours_each_value_and_leaves_missing_cells_blank():
    grid = [[1.0, math.nan], [-1.0, 0.0]]
    root = parse(Chart([Heatmap(grid, ["a", "b"], ["a", "b"], RDBU, -1.0, 1.0)], 300, 260).svg("h"))
    cells = [r for r in root.iter(NS + "rect") if r.find(NS + "title") is not None]
    assert [(c.find(NS + "title").text, c.get("fill")) for c in cells] == [
        ("a / a: 1", RDBU[-1]), ("b / a: -1", RDBU[0]), ("b / b: 0", RDBU[5])]
    written = [t.text for t in root.iter(NS + "text") if re.fullmatch(r"-?\d+\.\d\d", t.text or "")]
    assert sorted(written) == ["-1.00", "0.00", "1.00"]  # the cells' values, two decimals


def test_names_from_a_run_are_text_never_markup():
    """A policy or opponent name is whatever a run stored: it is shown, escaped, and nothing in
    the SVG can fetch or run anything."""
    hostile = ['"><script>alert(1)</script>', "a\x1b]0;owned\x07b", "x\u202eevil", "<!-- -->", "&amp;"]
    ax = Axes(title=hostile[0], xlabel=hostile[1], ylabel=hostile[2])
    ax.barh(hostile, [1.0, -1.0, 0.5, 0.0, 2.0], ["#2b7bba"] * 5)
    heat = Heatmap([[0.1] * 5] * 5, hostile, hostile, BLUES, 0.0, 1.0, title=hostile[3], rotate_cols=True)
    svg = Chart([ax, heat], 600, 400).svg(hostile[4])
    root = parse(svg)
    assert not [e for e in root.iter() if e.tag.split("}")[1] in ("script", "image", "foreignObject", "a", "use")]
    assert not any(k in e.attrib for e in root.iter() for k in ("href", "onload", "style", "id"))
    assert "\x1b" not in svg and "\u202e" not in svg and "<script" not in svg
    assert '&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;' in svg


def test_long_names_are_shortened_on_axes_and_whole_in_hover_titles():
    name = "file:/home/someone/experiments/policies/frequency_counter_v2.py"
    assert short("p0") == "p0" and len(short(name)) == 32 and short(name).endswith("counter_v2.py")
    root = parse(Chart([Heatmap([[0.5]], [name], [name], BLUES, 0.0, 1.0)], 300, 200).svg("h"))
    assert short(name) in {t.text for t in root.iter(NS + "text")}
    assert any(name in (r.findtext(NS + "title") or "") for r in root.iter(NS + "rect"))
