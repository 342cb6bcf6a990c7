"""How the CLI shows a CSRO run (the run kind ``csro``): its event lines, its closing summary
and its status text (``VIEW``)."""

from __future__ import annotations

import pathlib
import re
import sys

from rich.console import Console
from rich.table import Table

from csro import events
from csro.authorship import by_author_text
from csro.cli._views import View

out = Console(width=None if sys.stdout.isatty() else 160, emoji=False)


def _fmt(x: object, digits: int = 3) -> str:
    return "-" if x is None else (f"{x:.{digits}f}" if isinstance(x, float) else str(x))


def _one_line(text: object, width: int = 120) -> str:
    """An error as one line: a traceback becomes its kind and its last line."""
    text = str(text or "?").strip()
    if "Traceback (most recent call last)" in text:
        head = text.split("Traceback (most recent call last)")[0].rstrip(": ")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        raised = [line for line in lines if re.match(r"[\w.]+(Error|Exception|Exit|Interrupt)\b", line)]
        last = (raised or lines)[-1]
        text = f"{head}: {last}" if head else last
    line = text.splitlines()[0] if text else "?"
    return line if len(line) <= width else line[: width - 1] + "…"


def event_line(iteration: int, kind: str, data: dict, total: int) -> str | None:
    """One terminal line for a loop or oracle event (None: not shown)."""
    if kind == events.ITERATION_START:
        return f"[bold]iteration {iteration}/{total}[/bold]: population {data.get('population')}, calling the oracle"
    if kind == events.ORACLE_CANDIDATE:
        what = f"valid, u = {_fmt(data.get('utility'))}" if data.get("valid") else f"invalid: {_one_line(data.get('error'))}"
        if data.get("duplicate_of"):
            what = f"the program of {data['duplicate_of']} again, not evaluated twice ({what})"
        return f"  candidate {data.get('key', '?')}: {what}"
    if kind == events.ORACLE_REJECTED and "key" in data:
        return None  # its candidate line said why
    if kind in (events.ORACLE_REJECTED, events.ORACLE_FAILED, events.DUPLICATE):
        return f"  [yellow]{kind.replace('_', ' ')}[/yellow]: {_one_line(data.get('reason'), 140)}"
    if kind == events.EVOLVE_RESCORED and data.get("elites"):
        return (f"  archive carried over: {data['elites']} elites, {data['programs']} programs re-scored, "
                f"{data['cells_simulated']} new cells simulated")
    if kind == events.EVOLVE_GENERATION:
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(data["statuses"].items()))
        return f"  generation {data['generation']}: {data['programs']} programs ({statuses}), best u = {_fmt(data.get('best_fitness'))}"
    if kind == events.ITERATION_DONE:
        parts = [f"population {data.get('population_size')}", f"meta-NashConv {_fmt(data.get('meta_nash_conv'))}"]
        if "br_utility" in data:
            parts.insert(1, f"BR u {_fmt(data['br_utility'])}")
        if "agg_score" in data:
            parts += [f"PopReturn {_fmt(data['pop_return'])}", f"AggScore {_fmt(data['agg_score'])}"]
        return f"  iteration {iteration} done ({_fmt(data.get('seconds'), 1)} s): " + ", ".join(parts)
    if kind == events.FINAL_EVALUATION:
        return f"[bold]final evaluation[/bold] of sigma over {data.get('population')} policies"
    return None


def _summary(directory: pathlib.Path, report: pathlib.Path, s: dict) -> None:
    """The final table: the population with sigma and each member's score against sigma, and
    the final sigma's metrics beside the initial policy's (iteration 0, scored when
    ``evaluation.every_iteration`` is on)."""
    _population_table(s, title=f"population of {directory}")
    final = s["final"]
    if final:
        from csro.store import RunStore

        with RunStore.open(directory) as store:
            initial = next((d for d in store.iterations() if d["iteration"] == 0 and "agg_score" in d), None)
        if initial:
            out.print(f"initial policy:      PopReturn {_fmt(initial['pop_return'])}  PopExpl {_fmt(initial['pop_expl'])}  "
                      f"AggScore {_fmt(initial['agg_score'])}")
        out.print(f"final sigma-mixture: PopReturn {_fmt(final['pop_return'])}  PopExpl {_fmt(final['pop_expl'])}  "
                  f"AggScore {_fmt(final['agg_score'])}  NashConv {_fmt(final['nash_conv'])}")
    _cost_line(s)
    out.print(f"report: {report}")


def _cost_line(s: dict, roles: bool = True) -> None:
    """LLM calls, tokens, money and time, and (``roles``) per role."""
    total = s["llm"]["usage"]["total"]
    cost = "cost unknown" if total["cost_usd"] is None else f"${total['cost_usd']:.4f}"
    out.print(f"LLM: {total['calls']} calls ({total['programs']} distinct programs), {total['tokens_in']} tokens in ({total['tokens_cached']} cached), "
              f"{total['tokens_out']} out, {total['errors']} errors, {cost}, {total['seconds']:.1f} s; "
              f"{s['llm']['retried']} calls retried, {s['llm']['waited_s']:.1f} s waiting for the provider")
    by_role = s["llm"]["usage"]["roles"]
    if roles and by_role:
        out.print("  by role: " + ", ".join(
            f"{role} {g['calls']} calls/" + ("?" if g["cost_usd"] is None else f"${g['cost_usd']:.4f}")
            for role, g in by_role.items()), highlight=False)


def _population_table(s: dict, title: str | None = None) -> None:
    """One table per population (one per player in n-player, general-sum or asymmetric games),
    each member with its author (``csro.authorship``), and sigma's weight per kind of author
    (free model code, the model's choices in a grammar, the grammar without a model, the example,
    built-ins, files) rather than one "model-written" figure (issue 40)."""
    several = len(s["populations"]) > 1
    for player, (population, sigma) in enumerate(zip(s["populations"], s["sigmas"])):
        caption = f"{title}, player {player}" if title and several else (f"player {player}" if several else title)
        table = Table("policy", "iteration", "oracle", "author", "u vs sigma_(k-1)", "sigma", "sha256", title=caption)
        for member, weight in zip(population, sigma):
            table.add_row(member["id"], str(member["iteration"]), member["oracle"], member["author"],
                          _fmt(member.get("utility"), 2), f"{weight:.3f}", (member["sha256"] or "built-in")[:12])
        out.print(table)
        out.print("sigma by author: " + by_author_text(s["sigma_by_author"][player])
                  + (f" (player {player})" if several else ""), highlight=False)


def _status_text(directory: pathlib.Path, s: dict) -> None:
    state = "done" if s["done"] else f"iteration {_fmt(s['iteration'])} of {s['iterations']} finished"
    out.print(f"{directory}: {state}")
    if s["stopped"]:
        out.print(f"stopped by the LLM {s['stopped_by']}: {s['stopped']}", highlight=False)
    _population_table(s)
    if s.get("sandbox"):
        from csro.policies import describe_layers

        out.print("sandbox: " + "; ".join(f"{k} {v}" for k, v in describe_layers(s["sandbox"]).items()),
                  highlight=False)
    _cost_line(s, roles=False)
    usage = s["llm"]["usage"]
    if usage["iterations"]:
        table = Table("LLM calls", "calls", "programs", "tokens in", "cached", "tokens out", "errors", "USD", "seconds")
        groups = list(usage["roles"].items()) + [(f"iteration {g['iteration']}", g) for g in usage["iterations"]]
        for name, g in groups:
            table.add_row(name, str(g["calls"]), str(g["programs"]), str(g["tokens_in"]), str(g["tokens_cached"]), str(g["tokens_out"]),
                          str(g["errors"]), "unknown" if g["cost_usd"] is None else f"{g['cost_usd']:.4f}",
                          f"{g['seconds']:.1f}")
        out.print(table)


VIEW = View(event_line=event_line, closing=_summary, status=_status_text, total=lambda s: s["iterations"])
