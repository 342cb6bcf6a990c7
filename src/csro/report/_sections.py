"""The report's sections, each a function of what is read from the run store.

A ``Run`` is everything read from the store once; the section builders only format it.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from typing import Iterable, Sequence

import yaml
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from csro import events
from csro.authorship import UNKNOWN, by_author_text, weight_by_author
from csro.llm import LLMReply, LLMRequest, last_stop, role_of
from csro.llm import usage as llm_usage
from csro.llm import waiting
from csro.policies import describe_layers
from csro.report import _plots
from csro.report._html import (
    details, esc, figure, fmt, json_block, key_values, policy_link, pre, table, weights_table, with_ci)
from csro.store import PolicyRecord, RunStore, SigmaRecord

# event kinds that say why a candidate program did not join the population
REJECTION_KINDS = (events.ORACLE_REJECTED, events.ORACLE_FAILED, events.DUPLICATE)

CODE_FORMATTER = HtmlFormatter(cssclass="highlight")


@dataclasses.dataclass(frozen=True)
class Run:
    """A snapshot of one run's store."""

    directory: str
    config: dict
    policies: list[PolicyRecord]
    sigmas: list[SigmaRecord]
    iterations: list[dict]
    final: dict | None
    calls: list[tuple[LLMRequest, LLMReply]]
    events: list[dict]
    match_counts: dict[str, int]
    payoff_svg: str | None

    @classmethod
    def read(cls, store: RunStore) -> "Run":
        policies = store.policies()
        return cls(str(store.directory), store.config(), policies, store.sigmas(), store.iterations(),
                   store.final(), store.llm_calls(), store.events(), store.match_counts(),
                   _plots.payoff_plot(store.population_table(), [p.id for p in policies]))

    @property
    def usage(self) -> dict:
        """The LLM spending per role, per iteration and in total (``csro.llm.usage``)."""
        return llm_usage(r for _, r in self.calls)

    @property
    def names(self) -> set[str]:
        return {p.id for p in self.policies}


def sigma_rule(cfg: dict) -> str:
    """How the run chose sigma: its meta-solver, or the ``strongest`` selection (docs/loop.md)."""
    solver = cfg.get("meta_solver", "?")
    if (cfg.get("meta_game") or {}).get("select") == "strongest":
        return f"strongest plausible mixture (cells' 95% CI; meta_solver {solver} unused)"
    return f"meta-solver {solver}"


def sandbox_line(run_events: Sequence[dict]) -> str:
    """The kernel layers the run's untrusted code ran under (its last start or resume)."""
    recorded = [e["data"] for e in run_events if e["kind"] == events.SANDBOX]
    if not recorded:
        return "not recorded (a run made before csro recorded it)"
    return "; ".join(f"{k}: {v}" for k, v in describe_layers(recorded[-1]).items())


def stopped_status(run: Run) -> str | None:
    """Why an unfinished run stopped (its LLM budget or provider), or None."""
    stop = last_stop(run.events)
    return None if run.final is not None or stop is None else f"stopped by the LLM {stop['by']}: {stop['reason']}"


def header(run: Run) -> str:
    cfg = run.config
    llm = cfg.get("llm") or {}
    done = max((it["iteration"] for it in run.iterations), default=None)
    status = "finished (final evaluation stored)" if run.final is not None else (
        "not started" if done is None else "in progress or interrupted (no final evaluation yet)")
    status = stopped_status(run) or status
    used = sorted({f"{r.provider}/{r.model}" for _, r in run.calls})
    facts = key_values([
        ("game", esc(cfg.get("game", "?"))),
        ("status", esc(status)),
        ("iterations done", f"{fmt(done)} / {fmt(cfg.get('iterations'))}"),
        ("population", f"{len(run.policies)} policies"),
        ("oracle", esc((cfg.get("oracle") or {}).get("kind", "?"))),
        ("sigma", esc(sigma_rule(cfg))),
        ("LLM (configured)", f"{esc(llm.get('provider', '?'))} / {esc(llm.get('model'))}"),
        ("LLM (used)", esc(", ".join(used)) if used else "no calls recorded"),
        ("sandbox", esc(sandbox_line(run.events))),
        ("matches stored", esc(", ".join(f"{k}: {v}" for k, v in run.match_counts.items()) or "none")),
        ("run directory", f"<code>{esc(run.directory)}</code>"),
    ])
    config_yaml = yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True)
    return (f'<section id="run"><h2>Run</h2>{facts}'
            f'{details("Configuration (YAML)", pre(config_yaml, "yaml"))}</section>')


def final_metrics(run: Run) -> str:
    final = run.final
    if final is None:
        return ('<section id="final"><h2>Final metrics</h2>'
                '<p class="missing">Not finished yet: no final evaluation is stored.</p></section>')
    ci = final.get("ci95") or {}
    rows = [(name, with_ci(final.get(key), ci.get(key))) for key, name in _plots.METRICS]
    if final.get("nash_conv") is not None:
        rows.append(("NashConv (exact)", fmt(final["nash_conv"])))
    if final.get("nash_conv_note"):
        rows.append(("NashConv note", esc(final["nash_conv_note"])))
    estimate = final.get("expl_estimate") or {}
    if estimate.get("lower_bound") is not None:
        rows.append(("exploitability ≥ (one more best response)",
                     with_ci(estimate["lower_bound"], estimate.get("ci95"))))
    rows.append(("matches per opponent", fmt(final.get("matches_per_opponent"))))
    population = final.get("population") or []
    per_player = bool(population) and isinstance(population[0], list)
    for player, members in enumerate(population if per_player else [population]):
        label = f"population of player {player}" if per_player else "population"
        rows.append((label, ", ".join(policy_link(n, run.names) for n in members) or "—"))
    sigma = final.get("sigma")
    sigmas = sigma if isinstance(sigma, list) else [sigma]
    authors = {p.id: p.author for p in run.policies}
    if not sigma:
        mixture = '<p class="missing">No final mixture is stored.</p>'
    elif all(isinstance(s, dict) and all(isinstance(v, (int, float)) for v in s.values()) for s in sigmas):
        mixture = "".join((f"<h4>player {p}</h4>" if per_player else "") + weights_table(s, run.names, authors)
                          for p, s in enumerate(sigmas))
        rows.append(("sigma by author", " / ".join(
            by_author_text(weight_by_author([authors.get(n, UNKNOWN) for n in s], s.values())) for s in sigmas)))
    else:
        mixture = json_block(sigma)
    seats = final.get("seats") or []
    regrets = next((it["regrets"] for it in reversed(run.iterations) if it.get("regrets")), None) or []
    by_seat = ("<h3>Per seat</h3>" + table(
        ["seat", "PopReturn", "PopExpl", "AggScore", "welfare", "regret (meta-game)", "worst opponent"],
        ([fmt(s["seat"]), fmt(s["pop_return"]), fmt(s["pop_expl"]), fmt(s["agg_score"]), fmt(s["welfare"]),
          fmt(regrets[s["seat"]]) if s["seat"] < len(regrets) else "—", esc(s["worst_opponent"])]
         for s in seats))) if seats else ""
    return (f'<section id="final"><h2>Final metrics</h2>{key_values(rows)}'
            f'<h3>Final mixture</h3>{mixture}{by_seat}</section>')


def plots(run: Run) -> str:
    parts = [figure(_plots.metrics_plot(run.iterations), "Metrics after each iteration.",
                    "No per-iteration metrics are stored yet.")]
    if run.iterations:
        columns = list(dict.fromkeys(k for it in run.iterations for k in it if k not in ("iteration", "ci95")))
        rows = ([fmt(it["iteration"])] + [fmt(it.get(k)) for k in columns] for it in run.iterations)
        parts.append(details("Per-iteration numbers", table(["iteration", *columns], rows)))
    players = sorted({s.player for s in run.sigmas}) or [0]
    for player in players:
        parts.append(figure(_plots.sigma_plot(run.sigmas, player),
                            f"sigma_k of player {player}: each policy's weight after iteration k.",
                            "No meta-strategy is stored yet."))
    parts.append(figure(run.payoff_svg, "Mean return of the row policy against the column policy (meta matches).",
                        "No population matches are stored yet."))
    per_opponent = (run.final or {}).get("per_opponent") or {}
    parts.append(figure(_plots.per_opponent_plot(per_opponent),
                        "Mean return of the final mixture against each opponent of the evaluation population.",
                        "No final per-opponent evaluation is stored yet."))
    return f'<section id="plots"><h2>Plots</h2>{"".join(parts)}</section>'


def policies(run: Run) -> str:
    by_key = {str(q.key): (q, r) for q, r in run.calls}
    children = collections.defaultdict(list)
    for p in run.policies:
        if p.parent:
            children[p.parent].append(p.id)
    latest = {}
    for s in run.sigmas:
        latest[s.player] = dict(zip(s.names, s.sigma))
    blocks = [_policy(p, run.names, children[p.id], latest.get(p.player, {}).get(p.id), by_key) for p in run.policies]
    return f'<section id="policies"><h2>Policies</h2>{"".join(blocks) or "<p class=missing>No policies.</p>"}</section>'


def _policy(p: PolicyRecord, known: set[str], children: list[str], weight: float | None,
            by_key: dict[str, tuple[LLMRequest, LLMReply]]) -> str:
    facts = [("player", fmt(p.player)), ("iteration", fmt(p.iteration)), ("oracle", esc(p.oracle)),
             ("author", esc(p.author)),
             ("parent", policy_link(p.parent, known) if p.parent else "—"),
             ("children", ", ".join(policy_link(c, known) for c in children) or "—"),
             ("sha256", f"<code>{esc(p.sha256[:16])}</code>" if p.sha256 else "—"),
             ("weight in the latest sigma", fmt(weight))]
    if p.ref:
        facts.append(("built-in", f"<code>{esc(p.ref)}</code>"))
    for key, value in p.info.items():
        if value is None or isinstance(value, (str, int, float, bool)):
            facts.append((str(key), fmt(value)))
    nested = {k: v for k, v in p.info.items() if not (v is None or isinstance(v, (str, int, float, bool)))}
    parts = [f'<h3>{esc(p.id)} <span class="tag">{esc(p.oracle)}</span> <span class="tag">{esc(p.author)}</span></h3>',
             key_values(facts)]
    if nested:
        parts.append(details("More info (" + esc(", ".join(nested)) + ")", json_block(nested)))
    if p.source is not None:
        parts.append(highlight(p.source, PythonLexer(), CODE_FORMATTER))
    elif not p.ref:
        parts.append('<p class="missing">No source stored.</p>')
    if p.call_keys:
        parts.append("<h4>LLM exchanges</h4>" + "".join(llm_exchange(k, by_key.get(k)) for k in p.call_keys))
    return f'<article class="policy" id="policy-{esc(p.id)}">{"".join(parts)}</article>'


def llm_exchange(key: str, call: tuple[LLMRequest, LLMReply] | None) -> str:
    if call is None:
        return f'<p class="missing">Call {esc(key)}: not recorded in the store.</p>'
    q, r = call
    badge = f' <span class="err">error</span>' if r.error else ""
    summary = (f"<code>{esc(key)}</code> · {esc(r.provider)}/{esc(r.model)} · {r.tokens_in} → {r.tokens_out} tokens"
               f" · {r.latency_s:.1f} s · {r.attempts} attempt(s){badge}")
    body = [f'<div class="msg"><div class="role">{esc(m.role)}</div>{pre(m.content)}</div>' for m in q.messages]
    if q.prefill:
        body.append(f'<div class="msg"><div class="role">assistant prefill</div>{pre(q.prefill)}</div>')
    if r.error:
        body.append(f'<p class="err">{esc(r.error)}</p>')
    else:
        body.append(f'<div class="msg reply"><div class="role">reply</div>{pre(r.text)}</div>')
    params = [("temperature", fmt(q.temperature)), ("seed", fmt(q.seed)), ("max_tokens", fmt(q.max_tokens)),
              ("stop", esc(", ".join(map(repr, q.stop))) or "—"), ("grammar", "yes" if q.grammar else "no")]
    body.append(key_values(params))
    if q.grammar:
        body.append(details("Grammar", pre(q.grammar)))
    return f'<details class="llm"><summary>{summary}</summary>{"".join(body)}</details>'


def usd(value: float | None) -> str:
    """Dollars for display; ``unknown`` when a price is not known (never a silent 0)."""
    return "unknown" if value is None else f"${value:.4f}"


def _cost_table(label: str, groups: Iterable[tuple[str, dict]]) -> str:
    """One row per group of ``csro.llm.usage``: calls, distinct programs, tokens, cost and time."""
    rows = ([esc(name), fmt(g["calls"]), fmt(g["programs"]), fmt(g["tokens_in"]), fmt(g["tokens_cached"]), fmt(g["tokens_out"]),
             fmt(g["errors"]), usd(g["cost_usd"]), f"{g['seconds']:.1f}", f"{g['seconds'] / g['calls']:.2f}"]
            for name, g in groups)
    return table([label, "calls", "distinct programs", "tokens in", "cached", "tokens out", "errors", "cost (USD)", "latency (s)",
                  "mean (s)"], rows, "cost")


def llm_cost(run: Run) -> str:
    total = run.usage["total"]
    budget = {k: v for k, v in ((run.config.get("llm") or {}).get("budget") or {}).items() if v}
    waited = waiting(total, run.events)
    totals = key_values([("calls", fmt(total["calls"])), ("distinct programs", fmt(total["programs"])), ("tokens in", fmt(total["tokens_in"])),
                         ("of which cached", fmt(total["tokens_cached"])), ("tokens out", fmt(total["tokens_out"])),
                         ("errors", fmt(total["errors"])), ("cost", usd(total["cost_usd"])),
                         ("total latency", f"{total['seconds']:.1f} s"),
                         ("calls retried (a flaky provider)", fmt(waited["retried"])),
                         ("time waiting for the provider", f"{waited['waited_s']:.1f} s"),
                         ("budget (llm.budget)", esc(json.dumps(budget)) if budget else "none")])
    parts = [totals, _calls(run) if run.calls else '<p class="missing">No LLM calls are recorded.</p>',
             "<h3>Rejected candidates</h3>", _rejections(run)]
    kinds = collections.Counter(e["kind"] for e in run.events)
    if kinds:
        rows = ([esc(k), fmt(n)] for k, n in sorted(kinds.items()))
        parts.append(details("All events by kind", table(["event", "count"], rows)))
    return f'<section id="llm"><h2>LLM cost and time</h2>{"".join(parts)}</section>'


def _calls(run: Run) -> str:
    """Cost per role and per iteration, and one row per call."""
    used_by = {k: p.id for p in run.policies for k in p.call_keys}
    rows = ([f"<code>{esc(q.key)}</code>", esc(role_of(q.key.step)), esc(f"{r.provider}/{r.model}"),
             fmt(r.tokens_in), fmt(r.tokens_out), usd(r.cost_usd), f"{r.latency_s:.2f}", fmt(r.attempts),
             esc(r.error or ""), policy_link(used_by[str(q.key)], run.names) if str(q.key) in used_by else ""]
            for q, r in run.calls)
    every = table(["key", "role", "model", "in", "out", "cost", "latency (s)", "attempts", "error", "made"], rows)
    iterations = ((str(g["iteration"]), g) for g in run.usage["iterations"])
    return ("<h3>Per role</h3>" + _cost_table("role", run.usage["roles"].items())
            + "<h3>Per iteration</h3>" + _cost_table("iteration", iterations)
            + details(f"Every call ({len(run.calls)})", every))


def _rejections(run: Run) -> str:
    """The events that say why a candidate did not join the population."""
    rejected = [e for e in run.events if e["kind"] in REJECTION_KINDS]
    if not rejected:
        return '<p class="missing">No candidate was rejected.</p>'
    rows = ([fmt(e["iteration"]), esc(e["kind"]), esc(e["data"].get("reason", "")),
             details("data", json_block(e["data"]))] for e in rejected)
    return table(["iteration", "event", "why", "details"], rows)
