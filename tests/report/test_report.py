"""The HTML report built from a fake run's store: sections, policies, escaping, self-containment."""

from __future__ import annotations

import re

import pytest

import csro.report
from csro.report import build_html, write_report
from csro.report._plots import per_opponent_plot
from csro.store import PolicyRecord, RunStore, SigmaRecord, StoreError

from ._fake_run import CONFIG, IMG, SCRIPT, TERMINAL, populate

HEADINGS = ["Run", "Final metrics", "Plots", "Policies", "LLM cost and time"]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    directory = tmp_path_factory.mktemp("report") / "run"
    with RunStore.create(directory, CONFIG) as store:
        populate(store)
        return build_html(store)


def article(page: str, policy_id: str) -> str:
    return re.search(rf'<article class="policy" id="policy-{policy_id}">(.*?)</article>', page, re.S).group(1)


def test_exported_names():
    assert csro.report.__all__ == [
        "CODE_FORMATTER", "CSS", "Axes", "Chart", "REPORT_NAME", "build_html", "details", "document", "esc", "figure", "fmt", "key_values",
        "llm_exchange", "pre", "reproduce_page", "table", "to_svg", "write_atomically", "write_report"]


def test_every_section_and_policy(page):
    for heading in HEADINGS:
        assert f"<h2>{heading}</h2>" in page
    for pid in ("p0", "p1", "p2"):
        assert f'id="policy-{pid}"' in page
    assert "2 / 2" in page  # iterations done / configured
    assert "meta-solver nash" in page
    assert "files / canned" in page
    assert "0.1 <span class=ci>± 0.02</span>" in page  # PopReturn with its interval
    assert "not computed for RRPS (too large)" in page
    assert page.count("<svg") == 4  # metrics, sigma, payoff table, per-opponent bars


def test_the_run_table_says_how_sigma_was_chosen(tmp_path):
    with RunStore.create(tmp_path / "run", {**CONFIG, "meta_game": {"select": "strongest"}}) as store:
        populate(store)
        html = build_html(store)
    assert "strongest plausible mixture" in html and "meta-solver nash" not in html


def test_lineage_source_and_exchanges(page):
    p2 = article(page, "p2")
    assert '<th>parent</th><td><a href="#policy-p1">p1</a></td>' in p2
    assert '<th>children</th><td><a href="#policy-p2">p2</a></td>' in article(page, "p1")
    assert 'class="highlight"' in p2 and "act" in p2
    assert "<code>2/repair-0-1/0</code>" in p2 and "<code>2/refine-1/0</code>" in p2
    assert "Call 9/missing/0: not recorded in the store." in p2
    assert "<details class=\"llm\">" in p2 and "You write RRPS policies." in p2
    assert "builtin:random" in article(page, "p0")


def test_hostile_text_is_escaped_everywhere(page):
    assert SCRIPT not in page and "<script" not in page.lower()
    assert IMG not in page and "<img" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in article(page, "p2")  # the source, as text
    assert "refined &lt;script&gt;alert(1)&lt;/script&gt;" in page  # policy info
    assert "Beat them &lt;script&gt;" in page  # a prompt message
    assert "forfeited 3 of 4 matches &lt;/pre&gt;&lt;img src=x onerror=alert(2)&gt;" in page  # an event


def test_terminal_escapes_are_shown_not_kept(page):
    """A program's control and bidi characters reach the page as visible escapes
    (csro.text.untrusted), not as characters a browser, a copy-paste or a terminal acts on."""
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", page)
    assert TERMINAL not in page
    assert ("exception: ValueError: \\x1b]0;PWNED\\x07\\x1b]52;c;UFdORUQ=\\x07\\x1b[2J\\x9b31m"
            "\\x9d0;T\\x9c\\u202edetsurt\\u202c") in page


def test_page_is_self_contained(page):
    assert re.findall(r'href="([^"]*)"', page) and all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', page))
    assert re.findall(r"url\((?!#)", page) == []
    for needle in ("<link", "src=\"", "@import", "data:", "<iframe", "<object"):
        assert needle not in page
    assert "default-src 'none'" in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "element ids of the inline SVGs collide"


def test_llm_cost_and_rejections(page):
    llm = page[page.index('<section id="llm">'):]
    assert "<tr><th>calls</th><td>4</td></tr>" in llm and "<tr><th>errors</th><td>1</td></tr>" in llm
    assert "<tr><th>distinct programs</th><td>2</td></tr>" in llm  # the repair and the refinement wrote one
    assert "<tr><th>cost</th><td>$0.0450</td></tr>" in llm and "<tr><th>of which cached</th><td>30000</td></tr>" in llm
    for role, calls, cost in (("proposal", 2, "$0.0150"), ("repair", 1, "$0.0150"), ("refinement", 1, "$0.0150")):
        assert f"<tr><td>{role}</td><td>{calls}</td>" in llm and cost in llm
    assert "<tr><td>2</td><td>3</td><td>1</td><td>24000</td><td>20000</td><td>800</td><td>1</td><td>$0.0300</td>" in llm
    assert "HTTP 503 after 3 attempts" in llm
    assert "<td>oracle_rejected</td>" in llm and "<td>duplicate</td><td>same program</td>" in llm


def test_per_opponent_bars_are_sorted():
    svg = per_opponent_plot({"middle": 0.5, "worst": -1.0, "best": 1.0})
    order = [svg.index(f">{name}</text>") for name in ("best", "middle", "worst")]
    assert order == sorted(order)
    assert per_opponent_plot({}) is None


def test_an_empty_run(tmp_path):
    with RunStore.create(tmp_path, {"game": "leduc"}) as store:
        page = build_html(store)
    for heading in HEADINGS:
        assert f"<h2>{heading}</h2>" in page
    for note in ("Not finished yet", "No per-iteration metrics", "No meta-strategy", "No population matches",
                 "No LLM calls are recorded", "No policies", "No candidate was rejected", "not started"):
        assert note in page
    assert "<svg" not in page


def test_one_policy_and_no_final(tmp_path):
    with RunStore.create(tmp_path, {"game": "rrps", "iterations": 5}) as store:
        store.add_policy(PolicyRecord("p0", 0, 0, "initial", None, "builtin:random", None, None))
        store.add_sigma(SigmaRecord(0, 0, ("p0",), (1.0,), "nash", 0.0))
        store.mark_iteration(0, {"population_size": 1, "meta_nash_conv": 0.0})
        page = build_html(store)
    assert 'id="policy-p0"' in page and "0 / 5" in page and "Not finished yet" in page
    assert page.count("<svg") == 2  # meta NashConv and sigma; no payoff cells yet, no final bars
    assert "in progress or interrupted" in page


def test_write_report(fake_run):
    path = write_report(fake_run)
    assert path == fake_run / "report.html"
    with RunStore.open(fake_run) as store:
        assert path.read_text(encoding="utf-8") == build_html(store)
    assert sorted(p.name for p in fake_run.iterdir() if p.name.startswith("report")) == ["report.html"]


def test_write_report_without_a_run(tmp_path):
    with pytest.raises(StoreError, match="no run at"):
        write_report(tmp_path)


def test_a_budget_stop_and_an_unknown_price_are_shown(tmp_path):
    from csro.llm import CallKey, LLMReply, LLMRequest, Message

    with RunStore.create(tmp_path, {"game": "rrps", "llm": {"budget": {"usd": 0.5}}}) as store:
        key = CallKey(1, "propose")
        store.add_llm_call(LLMRequest(key, (Message("user", "x"),)),
                           LLMReply(key, "class Agent: ...", "openai", "my-local-model", 900, 100))
        store.add_event(1, "iteration_start", {"population": 1})
        store.add_event(1, "budget_exhausted", {"reason": "llm.budget.usd = 0.5 reached: 0.45 USD spent"})
        page = build_html(store)
    assert "stopped by the LLM budget: llm.budget.usd = 0.5 reached: 0.45 USD spent" in page
    llm = page[page.index('<section id="llm">'):]
    assert "<tr><th>cost</th><td>unknown</td></tr>" in llm and '<tr><td>proposal</td><td>1</td>' in llm
    assert "<tr><th>budget (llm.budget)</th><td>{&quot;usd&quot;: 0.5}</td></tr>" in llm
