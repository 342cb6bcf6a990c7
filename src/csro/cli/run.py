"""``csro run``, ``csro resume``, ``csro status`` and ``csro report``: every kind of run, and ``csro config``.

The commands dispatch through the run-kind registry (``csro.runkinds``): ``run`` starts the kind
its configuration names, the others read the kind recorded in the run directory. How each kind
is shown is its ``View`` (``VIEWS``); the CSRO loop's is here. The registry and the stores are
imported by the commands that use them, so ``csro --help`` loads none of them.
"""

from __future__ import annotations

import contextlib
import json
import re
import pathlib
import sys
from typing import TYPE_CHECKING, Iterator, List, Optional

import typer
from rich.console import Console
from rich.table import Table

from csro import events
from csro.cli import aor, discover, train
from csro.cli._app import app
from csro.cli._progress import new_progress
from csro.cli._views import View
from csro.errors import BudgetExhausted, ConfigError

if TYPE_CHECKING:
    from csro.runs import Hooks

out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


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


def _event_line(iteration: int, kind: str, data: dict, total: int) -> str | None:
    """One terminal line for a loop or oracle event (None: not shown)."""
    if kind == events.ITERATION_START:
        return f"[bold]iteration {iteration}/{total}[/bold]: population {data.get('population')}, calling the oracle"
    if kind == events.ORACLE_CANDIDATE:
        what = f"valid, u = {_fmt(data.get('utility'))}" if data.get("valid") else f"invalid: {_one_line(data.get('error'))}"
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


@contextlib.contextmanager
def _hooks(view: View, total: int | None) -> Iterator[Hooks]:
    """Event lines on stderr, and a match progress bar when stderr is a terminal."""
    from csro.runs import Hooks

    if not sys.stderr.isatty():
        def on_event(i: int, kind: str, data: dict) -> None:
            line = view.event_line(i, kind, data, total)
            if line:
                err.print(line, highlight=False)
        yield Hooks(on_event=on_event)
        return
    with new_progress() as bar:
        tasks: dict[str, int] = {}

        def on_event(i: int, kind: str, data: dict) -> None:
            line = view.event_line(i, kind, data, total)
            if line:
                bar.console.print(line, highlight=False)

        def on_progress(phase: str, done: int, total_matches: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(f"{phase} matches", total=total_matches)
            bar.update(tasks[phase], completed=done, total=total_matches)
            if done >= total_matches:
                bar.remove_task(tasks.pop(phase))

        yield Hooks(on_event=on_event, on_progress=on_progress)


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
    out.print(f"LLM: {total['calls']} calls, {total['tokens_in']} tokens in ({total['tokens_cached']} cached), "
              f"{total['tokens_out']} out, {total['errors']} errors, {cost}, {total['seconds']:.1f} s")
    by_role = s["llm"]["usage"]["roles"]
    if roles and by_role:
        out.print("  by role: " + ", ".join(
            f"{role} {g['calls']} calls/" + ("?" if g["cost_usd"] is None else f"${g['cost_usd']:.4f}")
            for role, g in by_role.items()), highlight=False)


def _population_table(s: dict, title: str | None = None) -> None:
    """One table per population (one per player in n-player, general-sum or asymmetric games)."""
    several = len(s["populations"]) > 1
    for player, (population, sigma) in enumerate(zip(s["populations"], s["sigmas"])):
        caption = f"{title}, player {player}" if title and several else (f"player {player}" if several else title)
        table = Table("policy", "iteration", "oracle", "u vs sigma_(k-1)", "sigma", "sha256", title=caption)
        for member, weight in zip(population, sigma):
            table.add_row(member["id"], str(member["iteration"]), member["oracle"], _fmt(member.get("utility"), 2),
                          f"{weight:.3f}", (member["sha256"] or "built-in")[:12])
        out.print(table)


def _status_text(directory: pathlib.Path, s: dict) -> None:
    state = "done" if s["done"] else f"iteration {_fmt(s['iteration'])} of {s['iterations']} finished"
    out.print(f"{directory}: {state}")
    if s["stopped"]:
        out.print(f"stopped by the LLM budget: {s['stopped']}", highlight=False)
    _population_table(s)
    _cost_line(s, roles=False)
    usage = s["llm"]["usage"]
    if usage["iterations"]:
        table = Table("LLM calls", "calls", "tokens in", "cached", "tokens out", "errors", "USD", "seconds")
        groups = list(usage["roles"].items()) + [(f"iteration {g['iteration']}", g) for g in usage["iterations"]]
        for name, g in groups:
            table.add_row(name, str(g["calls"]), str(g["tokens_in"]), str(g["tokens_cached"]), str(g["tokens_out"]),
                          str(g["errors"]), "unknown" if g["cost_usd"] is None else f"{g['cost_usd']:.4f}",
                          f"{g['seconds']:.1f}")
        out.print(table)


VIEWS = {
    "csro": View(event_line=_event_line, closing=_summary, status=_status_text, total=lambda s: s["iterations"]),
    "discover": discover.VIEW,
    "aor": aor.VIEW,
    "train": train.VIEW,
}


@app.command("run")
def run_cmd(
    config: pathlib.Path = typer.Argument(..., help="The run's YAML configuration; its kind field names the kind "
                                                   "of run: csro (the default), discover, aor or train."),
    out_dir: Optional[pathlib.Path] = typer.Option(None, "--out", "-o",
                                                   help="The new run directory (its store and report.html)."),
    overrides: List[str] = typer.Option([], "--set", help="Override a field: key.path=value (repeatable)."),
    estimate: bool = typer.Option(False, "--estimate", help="CSRO runs: print the tokens and money the run would "
                                  "spend (low/expected/high); make no call and write nothing."),
) -> None:
    """Start a run of any kind (CSRO, discovery, AOR, training); resumable with `csro resume`.
    Exit 3: stopped by llm.budget (continue with `csro resume DIR --set llm.budget...`)."""
    from csro import runkinds

    cfg = runkinds.load(config, overrides)
    if estimate:
        if cfg.kind != "csro":
            raise ConfigError(f"--estimate: estimates are made for CSRO runs, not kind {cfg.kind!r}")
        from csro.cost import estimate_run
        from csro.llm.estimate import format_estimate

        print(format_estimate(estimate_run(cfg)), end="")
        return
    if out_dir is None:
        raise ConfigError("--out: csro run needs the new run directory (or --estimate)")
    view = VIEWS[cfg.kind]
    with _hooks(view, view.total(cfg.model_dump())) as hooks, _budget_stop(out_dir):
        report = runkinds.start(cfg, out_dir, hooks)
    view.closing(out_dir, report, runkinds.status(out_dir))


@app.command("resume")
def resume_cmd(
    directory: pathlib.Path = typer.Argument(..., help="The run directory."),
    overrides: List[str] = typer.Option([], "--set", help="Change the budget first: llm.budget.FIELD=value "
                                        "(repeatable; no other field may change)."),
) -> None:
    """Continue an interrupted run of any kind to the result an uninterrupted run would have.
    Exit 3: stopped by llm.budget again."""
    from csro import runkinds

    if overrides:
        runkinds.change_budget(directory, overrides)
    s = runkinds.status(directory)
    view = VIEWS[s["kind"]]
    with _hooks(view, view.total(s)) as hooks, _budget_stop(directory):
        report = runkinds.resume(directory, hooks)
    view.closing(directory, report, runkinds.status(directory))


@contextlib.contextmanager
def _budget_stop(directory: pathlib.Path) -> Iterator[None]:
    """A run stopped by its LLM budget: the exception learns the directory, so the message (and
    exit 3, in ``csro.cli.main``) can say how to continue it."""
    try:
        yield
    except BudgetExhausted as exc:
        exc.directory = directory
        raise


@app.command("status")
def status_cmd(
    directory: pathlib.Path = typer.Argument(..., help="The run directory."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Where a run stands (any kind): its progress, its members or steps, its final result, its LLM use."""
    from csro import runkinds

    s = runkinds.status(directory)
    if json_out:
        print(json.dumps(s))
        return
    VIEWS[s["kind"]].status(directory, s)


@app.command("report")
def report_cmd(directory: pathlib.Path = typer.Argument(..., help="The run directory.")) -> None:
    """Write DIR/report.html from the run's store, any kind (self-contained; open it in a browser)."""
    from csro import runkinds

    print(runkinds.report(directory))


@app.command("config")
def config_cmd(
    config: Optional[pathlib.Path] = typer.Argument(None, help="A YAML configuration (default: none, the defaults)."),
    overrides: List[str] = typer.Option([], "--set", help="Override a field: key.path=value (repeatable)."),
) -> None:
    """Print the effective configuration of any kind (--set kind=aor: the AOR defaults), every field described."""
    from csro import runkinds
    from csro.config import documented_yaml

    print(documented_yaml(runkinds.load(config, overrides)), end="")
