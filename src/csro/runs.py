"""The life of a CSRO run directory (the run kind ``csro`` of ``csro.runkinds``): start, resume,
status, report.

A run is a directory holding ``run.db`` (``csro.store``), the truth of the run, and the
``report.html`` built from it. ``start`` records the validated configuration and runs the
CSRO loop (``csro.psro``), the final evaluation (``csro.scoring``) and the report;
``resume`` reads the configuration back and does the same, with the store as the cache of
everything already done, so an interrupted run ends where an uninterrupted one would.

Wiring (our design; the paper, Hennes et al. arXiv 2603.10098, has no such layer): the LLM
client records every call in the store and serves recorded calls from it; the execution
backend (local pool or Ray) plays every match; one process at a time may work on a
directory (an advisory lock, released by the kernel even on ``kill -9``).

``status`` reads the store only; the loop, the game engine and the report are imported by the
functions that run or report (``csro status`` and the other run kinds, which share ``begin``,
``carry_on`` and ``locked``, do not pay for them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import pathlib
from typing import Callable, Iterator, Sequence

from csro import events
from csro.authorship import model_weight, weight_by_author
from csro.config import LLMConfig, RunConfig, apply_overrides, parse_config, parse_model
from csro.errors import ConfigError, RunStopped
from csro.llm import last_stop, stop_event, usage, waiting
from csro.store import DRAW, PolicyRecord, RunStore, SigmaRecord, StoreError

LOCK_NAME = ".lock"
# what ``resume --set`` may change: the budget, and how long a flaky provider is waited for (which
# changes no result, csro.llm.retry); the rest of a run is fixed by its store
RESUME_FIELDS = ("llm.budget", "llm.retry_budget_s", "llm.retries", "llm.backoff_s")


@dataclasses.dataclass
class Hooks:
    """Callbacks for a user interface, for every run kind (``csro.runkinds``).

    ``on_event(step, kind, data)``: a loop or oracle event at an iteration (CSRO), a round
    (AOR), a training step, or 0 (discovery); ``on_progress(phase, done, total)``: matches;
    ``on_generation(key, tokens, seconds, done)``: an LLM completion while it runs (CSRO runs
    with a provider that reports it, ``csro.llm.LLMClient``); ``on_wait(provider, what,
    seconds)``: the run waits for a flaky provider (``csro.llm.retry``).
    """

    on_event: Callable[[int, str, dict], None] | None = None
    on_progress: Callable[[str, int, int], None] | None = None
    on_generation: Callable[[str, int, float, bool], None] | None = None
    on_wait: Callable[[str, str, float], None] | None = None


def start(config: RunConfig, directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """A new run of ``config`` in ``directory``; returns the report's path."""
    from csro.games import load_game
    from csro.recording import replayed_secret

    load_game(config.game)  # refuse an unknown game before anything is written
    return begin(directory, config, lambda store: _execute(config, store, hooks), replayed_secret(config.llm))


def resume(directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """Continue the run in ``directory`` (a finished run only rewrites its report)."""
    return carry_on(directory, parse_config, lambda config, store: _execute(config, store, hooks))


def begin(directory: str | pathlib.Path, config, execute: Callable[[RunStore], pathlib.Path],
          secret: str | None = DRAW) -> pathlib.Path:
    """A new ``run.db`` run (CSRO or discovery): its store created with ``config`` and the
    secret of its match seeds (``RunStore.create``), locked, executed."""
    directory = pathlib.Path(directory)
    with RunStore.create(directory, config.to_dict(), secret) as store, locked(directory):
        return execute(store)


def carry_on(directory: str | pathlib.Path, parse: Callable[[dict], object],
             execute: Callable[[object, RunStore], pathlib.Path]) -> pathlib.Path:
    """Continue a ``run.db`` run under its lock: ``execute`` its parsed configuration, or only
    rewrite the report of a finished one."""
    directory = pathlib.Path(directory)
    with RunStore.open(directory) as store, locked(directory):
        config = parse(store.config())
        if store.final() is not None:
            return report(directory)
        return execute(config, store)


def change_budget(store, overrides: Sequence[str]) -> dict:
    """Apply ``key.path=value`` overrides of ``RESUME_FIELDS`` to the configuration recorded in
    ``store`` (a CSRO, discovery or AOR run: each has the ``llm`` section of ``csro.config``),
    validated and recorded; any other field is refused."""
    for item in overrides:
        key = item.partition("=")[0].strip()
        if not any(key == field or key.startswith(field + ".") for field in RESUME_FIELDS):
            raise ConfigError(f"--set {key}: only {', '.join(RESUME_FIELDS)} may change when resuming "
                              "(a run's other settings are fixed by what it has stored)")
    config = apply_overrides(store.config(), overrides)
    try:
        config["llm"] = parse_model(LLMConfig, config.get("llm")).model_dump(mode="json")
    except ConfigError as exc:  # name the field as the whole configuration would
        raise ConfigError(str(exc).replace("config field ", "config field llm.", 1)) from None
    store.set_config(config)
    return config


def _execute(config: RunConfig, store: RunStore, hooks: Hooks) -> pathlib.Path:
    from csro.arena import MatchArena
    from csro.evaluation.backends import make_backend
    from csro.games import load_game
    from csro.oracles import get_oracle
    from csro.policies import check_layers
    from csro.psro import CSRO
    from csro.recording import run_client
    from csro.scoring import Scorer, exploitability_estimate
    from csro.seeding import match_root
    from csro.simulate import StoredSimulator

    game = load_game(config.game)
    limits = config.sandbox.limits()
    store.add_event(len(store.iterations()), events.SANDBOX, check_layers())
    with run_client(config.llm, store, hooks.on_generation, hooks.on_wait) as llm, \
            make_backend(config.execution) as backend:
        sim = StoredSimulator(game, store, backend, seed=match_root(config.seed, store.secret()), limits=limits,
                              progress=hooks.on_progress)
        scorer = Scorer(game, sim, config.evaluation)
        loop = CSRO(config, game, store, sim, llm, oracle=get_oracle(config.oracle.kind),
                    arena=MatchArena(game, sim, matches=config.matches_per_cell),
                    on_event=hooks.on_event, on_iteration=scorer.per_iteration)
        try:
            _, final = loop.run()
            estimate = None
            if config.evaluation.br_estimate:
                try:
                    responses = [loop.respond(final, p) for p in range(len(final.members))]
                except RunStopped as exc:
                    loop.log(final.iteration + 1, stop_event(exc), exc.data())
                    raise
                estimate = exploitability_estimate(game, final, responses)
                loop.log(final.iteration + 1, events.EXPLOITABILITY_ESTIMATE, estimate)
        except RunStopped:  # recorded by the loop; the report shows where the run stopped
            report(store.directory)
            raise
        members = [list(m) for m in final.members]
        loop.log(config.iterations, events.FINAL_EVALUATION, {"population": sum(len(m) for m in members)})
        store.set_final({**scorer.final(members, list(final.sigmas)), "expl_estimate": estimate})
    return report(store.directory)


@contextlib.contextmanager
def locked(directory: pathlib.Path) -> Iterator[None]:
    with open(directory / LOCK_NAME, "w") as handle:
        try:
            # A POSIX record lock: held by this process only (forked workers do not inherit
            # it, unlike flock), and released by the kernel when the process dies.
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise StoreError(f"the run at {directory} is being worked on by another process") from None
        yield


def latest_sigmas(policies: Sequence[PolicyRecord], sigmas: Sequence[SigmaRecord]) -> list[tuple[list[PolicyRecord], list[float]]]:
    """Each player's population and the latest stored sigma's weight on each member (0 for
    one it does not name), player by player (one pair in a symmetric game)."""
    out = []
    for player in sorted({r.player for r in policies}) or [0]:
        mine = [s for s in sigmas if s.player == player]
        last = dict(zip(mine[-1].names, mine[-1].sigma)) if mine else {}
        members = [r for r in policies if r.player == player]
        out.append((members, [last.get(r.id, 0.0) for r in members]))
    return out


def status(directory: str | pathlib.Path) -> dict:
    """Where the run stands (the ``csro status --json`` object): one population and sigma per
    player in ``populations``/``sigmas`` (one in a symmetric game); ``population``/``sigma`` are
    player 0's. Each member says who wrote it (``author``, ``csro.authorship``) and with which
    calls; ``sigma_by_author`` is each population's sigma weight per kind of author
    (``csro.authorship.AUTHORS``: free model code, the model's choices in a grammar, the grammar
    without a model, the example, built-ins, files), and ``sigma_model_written`` its weight on
    the ``model`` and ``grammar`` members together (kept for older readers)."""
    with RunStore.open(directory) as store:
        config = store.config()
        finished = store.iterations()
        sigmas = store.sigmas()
        policies = store.policies()
        final = store.final()
        llm = store.llm_stats()
        spent = usage(reply for _, reply in store.llm_calls())
        recorded_events = store.events()
        sandbox = store.events(events.SANDBOX)
    populations, weights = [], []
    for members, sigma in latest_sigmas(policies, sigmas):
        populations.append([{"id": r.id, "iteration": r.iteration, "oracle": r.oracle, "author": r.author,
                             "call_keys": list(r.call_keys), "sha256": r.sha256, "utility": r.info.get("utility")}
                            for r in members])
        weights.append(sigma)
    return {
        "iteration": finished[-1]["iteration"] if finished else None,
        "iterations": config["iterations"],
        "done": final is not None,
        "population": populations[0],
        "sigma": weights[0],
        "populations": populations,
        "sigmas": weights,
        "sigma_model_written": [model_weight([m["author"] for m in p], w) for p, w in zip(populations, weights)],
        "sigma_by_author": [weight_by_author([m["author"] for m in p], w) for p, w in zip(populations, weights)],
        "final": None if final is None else {k: final.get(k) for k in ("pop_return", "pop_expl", "agg_score", "nash_conv",
                                                                      "expl_estimate", "seats")},
        "llm": {**{k: llm[k] for k in ("calls", "tokens_in", "tokens_out", "errors")}, "usage": spent,
                "budget": config["llm"].get("budget"), **waiting(spent["total"], recorded_events)},
        **stop_fields(recorded_events, final is not None),
        "sandbox": sandbox[-1]["data"] if sandbox else None,
    }


def stop_fields(recorded_events: Sequence[dict], done: bool) -> dict:
    """``stopped``, why an unfinished run stopped (None: it did not, or it went on), and
    ``stopped_by``, ``budget`` or ``provider`` (``csro.llm.budget.last_stop``)."""
    stop = None if done else last_stop(recorded_events)
    return {"stopped": stop and stop["reason"], "stopped_by": stop and stop["by"]}


def report(directory: str | pathlib.Path) -> pathlib.Path:
    """Rewrite ``DIR/report.html`` from the run store."""
    from csro.report import write_report

    return write_report(directory)
