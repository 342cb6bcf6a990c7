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
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import pathlib
from typing import Callable, Iterator

from csro import events
from csro.arena import MatchArena
from csro.config import LLMConfig, RunConfig, parse_config
from csro.errors import ConfigError
from csro.evaluation.backends import make_backend
from csro.games import load_game
from csro.llm import LLMClient, make_provider
from csro.oracles import get_oracle
from csro.policies import SandboxLimits
from csro.psro import CSRO, policy_spec
from csro.report import write_report
from csro.scoring import Scorer
from csro.simulate import StoredSimulator
from csro.store import RunStore, StoreError

LOCK_NAME = ".lock"


@dataclasses.dataclass
class Hooks:
    """Callbacks for a user interface, for every run kind (``csro.runkinds``).

    ``on_event(step, kind, data)``: a loop or oracle event at an iteration (CSRO), a round
    (AOR), a training step, or 0 (discovery); ``on_progress(phase, done, total)``: matches.
    """

    on_event: Callable[[int, str, dict], None] | None = None
    on_progress: Callable[[str, int, int], None] | None = None


def start(config: RunConfig, directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """A new run of ``config`` in ``directory``; returns the report's path."""
    load_game(config.game)  # refuse an unknown game before anything is written
    directory = pathlib.Path(directory)
    with RunStore.create(directory, config.to_dict()) as store, locked(directory):
        return _execute(config, store, hooks)


def resume(directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """Continue the run in ``directory`` (a finished run only rewrites its report)."""
    directory = pathlib.Path(directory)
    with RunStore.open(directory) as store, locked(directory):
        config = parse_config(store.config())
        if store.final() is not None:
            return write_report(directory)
        return _execute(config, store, hooks)


def _execute(config: RunConfig, store: RunStore, hooks: Hooks) -> pathlib.Path:
    game = load_game(config.game)
    sb = config.sandbox
    limits = SandboxLimits(memory_mb=sb.memory_mb, cpu_seconds=sb.cpu_seconds,
                           call_seconds=sb.call_seconds, match_seconds=sb.match_seconds)
    with llm_client(config.llm, store) as llm, make_backend(config.execution) as backend:
        sim = StoredSimulator(game, store, backend, seed=config.seed, limits=limits, progress=hooks.on_progress)
        scorer = Scorer(game, sim, config.evaluation)
        loop = CSRO(config, game, store, sim, llm, oracle=get_oracle(config.oracle.kind),
                    arena=MatchArena(game, sim, matches=config.matches_per_cell),
                    on_event=hooks.on_event, on_iteration=scorer.per_iteration)
        populations, sigmas = loop.run()
        estimate = loop.exploitability_estimate(sigmas) if config.evaluation.br_estimate else None
        members = [[policy_spec(r, game) for r in population] for population in populations]
        loop.log(config.iterations, events.FINAL_EVALUATION, {"population": sum(len(m) for m in members)})
        store.set_final({**scorer.final(members, sigmas), "expl_estimate": estimate})
    return write_report(store.directory)


@contextlib.contextmanager
def llm_client(llm: LLMConfig, store: RunStore) -> Iterator[LLMClient]:
    """A run's LLM client: every call recorded in ``store``, recorded calls served from it."""
    if llm.provider == "replay" and llm.path is not None and \
            pathlib.Path(llm.path).resolve() == store.directory.resolve():
        raise ConfigError("llm.path: a run cannot replay itself (resume it instead)")
    provider = make_provider(llm)  # replay opens the earlier run's store itself
    client = LLMClient(provider, concurrency=llm.concurrency, timeout_s=llm.timeout_s, retries=llm.retries,
                       backoff_s=llm.backoff_s, recorder=store.add_llm_call, recorded=store.llm_call)
    try:
        # The files provider hands out replies in submission order: give it the calls already made.
        on_submit = getattr(provider, "on_submit", None)
        if on_submit is not None:
            for request, _ in store.llm_calls():
                on_submit(request.key)
        yield client
    finally:
        client.close()


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


def status(directory: str | pathlib.Path) -> dict:
    """Where the run stands (the ``csro status --json`` object): one population and sigma per
    player in ``populations``/``sigmas`` (one in a symmetric game); ``population``/``sigma`` are
    player 0's."""
    with RunStore.open(directory) as store:
        config = store.config()
        finished = store.iterations()
        sigmas = store.sigmas()
        policies = store.policies()
        final = store.final()
        llm = store.llm_stats()
    players = sorted({r.player for r in policies}) or [0]
    populations, weights = [], []
    for player in players:
        mine = [s for s in sigmas if s.player == player]
        last = dict(zip(mine[-1].names, mine[-1].sigma)) if mine else {}
        members = [r for r in policies if r.player == player]
        populations.append([{"id": r.id, "iteration": r.iteration, "oracle": r.oracle, "sha256": r.sha256,
                             "utility": r.info.get("utility")} for r in members])
        weights.append([last.get(r.id, 0.0) for r in members])
    return {
        "iteration": finished[-1]["iteration"] if finished else None,
        "iterations": config["iterations"],
        "done": final is not None,
        "population": populations[0],
        "sigma": weights[0],
        "populations": populations,
        "sigmas": weights,
        "final": None if final is None else {k: final.get(k) for k in ("pop_return", "pop_expl", "agg_score", "nash_conv",
                                                                      "expl_estimate", "seats")},
        "llm": {k: llm[k] for k in ("calls", "tokens_in", "tokens_out", "errors")},
    }


def report(directory: str | pathlib.Path) -> pathlib.Path:
    """Rewrite ``DIR/report.html`` from the run store."""
    return write_report(directory)
