"""The HTML report of a run, built from its run store only.

``write_report(DIR)`` writes one self-contained ``DIR/report.html``: the run's header and
configuration, the final metrics (PopReturn, PopExpl, AggScore with 95% intervals and the
exact NashConv where present; the metrics of Lanctot et al. arXiv 2303.03196 as used by
CSRO, Hennes et al. arXiv 2603.10098), plots (metrics and sigma over iterations, the
population's payoff table, the final mixture against each opponent), every policy with its
lineage, highlighted source and the LLM exchanges that made it, and the LLM cost and time
with the reasons candidates were rejected. The layout is ours; the paper has no report.

Everything from the store (policy sources, prompts, replies, event data, names) is
escaped: LLM-written text is shown, never interpreted. A discovery run's page is built by
``_discovery``, a reproduction grid's by ``_reproduce``. The page helpers (escaping, tables,
plots as SVG -- ``Axes`` and ``Chart``, or ``to_svg`` of a matplotlib figure -- the page
shell, an LLM exchange) are exported for the other kinds' pages (``csro.robots``,
``csro.train.report``), which live with their kinds: the report imports no run kind.
"""

from csro.report._html import details, esc, figure, fmt, key_values, pre, table
from csro.report._page import CSS, REPORT_NAME, build_html, document, write_atomically, write_report
from csro.report._mpl import to_svg
from csro.report._sections import CODE_FORMATTER, llm_exchange
from csro.report._svg import Axes, Chart
from csro.report._reproduce import reproduce_page

__all__ = [
    "CODE_FORMATTER", "CSS", "Axes", "Chart", "REPORT_NAME", "build_html", "details", "document", "esc", "figure", "fmt",
    "key_values", "llm_exchange", "pre", "reproduce_page", "table", "to_svg", "write_atomically", "write_report",
]
