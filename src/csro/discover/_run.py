"""A discovery run directory (the run kind ``discover`` of ``csro.runkinds``): start, resume,
status, and the final comparison with the library.

A discovery run is a run store (``DIR/run.db``, the same tables as a CSRO run; its config is
``{"kind": "discover", "discover": ...}``) holding every LLM call, every program with its lineage and scores, the
events, and as its final record the best program's exploitability curves on the training and
held-out games next to the library's baselines. ``resume`` re-walks the search with the store
as its cache: recorded LLM calls are served from it and a stored program's scores are reused,
so only unfinished work is redone (the sandbox's stage-1 check is cheap and runs again).
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import pathlib
from csro import events
from csro.config import parse_model
from csro.errors import ConfigError, RunStopped
from csro.llm import LLMSession, stop_event, usage, waiting
from csro.recording import run_client
from csro.oracles.evolve import Evolution, ProgramDatabase
from csro.policies import SandboxLimits, check_layers
from csro.report import write_report
from csro.runs import Hooks, begin, carry_on, stop_fields
from csro.solvers.cfr import SolveConfig, log_checkpoints, solve
from csro.solvers.psro_exact import run_psro_exact
from csro.solvers.suite import resolve_games
from csro.store import RunStore

from ._cfr import CFRHooksProblem
from ._config import DiscoverConfig
from ._psro import MetaSolverProblem
from ._sandboxed import ProgramFailure

BASELINES = {"cfr": ("cfr+", "dcfr", "pcfr+", "vad-cfr"), "psro": ("uniform", "nash", "rm")}
REFERENCE = {"cfr": "cfr+", "psro": "uniform"}  # the behaviour descriptor counts games beaten against it
CURVE_POINTS = 12


def start(config: DiscoverConfig, directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """A new discovery run in ``directory``; returns the report's path."""
    _games(config)  # refuse unknown games before anything is written
    return begin(directory, config, lambda store: _execute(config, store, hooks))


def resume(directory: str | pathlib.Path, hooks: Hooks = Hooks()) -> pathlib.Path:
    """Continue a discovery run to the result an uninterrupted run would have."""
    return carry_on(directory, read_config, lambda config, store: _execute(config, store, hooks))


def status(directory: str | pathlib.Path) -> dict:
    """Where the search stands: programs written and scored, the best so far, the final record's summary."""
    with RunStore.open(directory) as store:
        config = read_config(store.config())
        programs = store.programs()
        final = store.final()
        llm = store.llm_stats()
        spent = usage(reply for _, reply in store.llm_calls())["total"]
        recorded_events = store.events()
    sandbox = [e for e in recorded_events if e["kind"] == events.SANDBOX]
    scored = [p for p in programs if p.get("fitness") is not None]
    best = max(scored, key=lambda p: p["fitness"], default=None)
    return {
        "target": config.target, "k": config.k(), "budget": config.budget, "done": final is not None,
        "programs": len(programs), "statuses": dict(collections.Counter(p["status"] for p in programs)),
        "best": None if best is None else {"id": best["id"], "fitness": best["fitness"]},
        "final": None if final is None else {k: final.get(k) for k in ("best", "fitness", "seed_fitness", "stop",
                                                                        "programs", "llm_calls")},
        "llm": {**{k: llm[k] for k in ("calls", "tokens_in", "tokens_out", "errors")},
                **waiting(spent, recorded_events)},
        "sandbox": sandbox[-1]["data"] if sandbox else None,
        **stop_fields(recorded_events, final is not None),
    }


def report(directory: str | pathlib.Path) -> pathlib.Path:
    """Rewrite ``DIR/report.html`` (the report of ``csro.report``, which shows discovery runs)."""
    return write_report(directory)


def read_config(data: dict) -> DiscoverConfig:
    """The stored configuration (``DiscoverConfig.to_dict``) validated."""
    if not isinstance(data.get("discover"), dict):
        raise ConfigError("the stored configuration is not a discovery's (no discover section)")
    return parse_model(DiscoverConfig, data["discover"])


def _games(config: DiscoverConfig):
    return resolve_games(config.train_games), resolve_games(config.test_games)


def _limits(config: DiscoverConfig) -> SandboxLimits:
    seconds = config.eval_seconds
    return SandboxLimits(memory_mb=config.memory_mb, cpu_seconds=int(seconds) + 5, start_seconds=30.0,
                         call_seconds=seconds, match_seconds=seconds)


def _execute(config: DiscoverConfig, store: RunStore, hooks: Hooks) -> pathlib.Path:
    train, test = _games(config)
    k = config.k()

    def log(kind: str, data: dict) -> None:
        store.add_event(0, kind, data)
        if hooks.on_event:
            hooks.on_event(0, kind, data)

    reference = {g.name: _baseline_curve(config, g, REFERENCE[config.target], k, (k,))[-1] for g in train}
    store.add_event(0, events.SANDBOX, check_layers())
    log(events.DISCOVER_START, {"target": config.target, "k": k, "train": [g.name for g in train],
                           "test": [g.name for g in test], "reference": reference})
    evolve = config.evolve.model_copy(update={"max_llm_calls": config.budget})
    kind = CFRHooksProblem if config.target == "cfr" else MetaSolverProblem
    extra = {} if config.target == "cfr" else {"eval_solver": config.eval_solver}
    problem = StoredScores(kind(train, k, config.quick_fraction, evolve, _limits(config), reference, **extra), store)
    db = ProgramDatabase(evolve.islands, problem.fitness, problem.descriptor)
    with run_client(config.llm, store, on_wait=hooks.on_wait) as llm:
        session = LLMSession(llm, iteration=0, temperature=config.llm.temperature, seed=config.seed)
        engine = Evolution(problem, db, session, evolve, max_tokens=config.max_tokens,
                           on_program=lambda p, f: store.add_program(dataclasses.asdict(p), f), log=log)
        engine.add_seeds([problem.seed_program])
        try:
            stop = engine.run()
        except RunStopped as exc:  # everything written so far is stored; a resume re-walks the search
            log(stop_event(exc), exc.data())
            raise
    best = db.best()
    seed = next(p for p in db.programs.values() if p.mutation == "seed")
    log(events.DISCOVER_COMPARE, {"best": best.id, "games": len(train) + len(test)})
    store.set_final(_compare(config, problem, best, train, test, k) | {
        "best": best.id, "fitness": db.fitness(best.id), "seed_fitness": db.fitness(seed.id), "stop": stop,
        "programs": len(db.programs), "llm_calls": engine.budget.calls})
    return write_report(store.directory)


def _compare(config, problem, best, train, test, k) -> dict:
    """The best program's curves and the baselines' on every game (the final record)."""
    checkpoints = log_checkpoints(k, CURVE_POINTS)
    baselines = config.baselines or BASELINES[config.target]
    games = [(g, "train") for g in train] + [(g, "test") for g in test]
    jobs = [(g, None) for g, _ in games] + [(g, algo) for g, _ in games for algo in baselines]

    def one(job):
        game, algo = job
        try:
            if algo is None:
                return problem.curve(best.source, game, k, checkpoints)
            return _baseline_curve(config, game, algo, k, checkpoints)
        except (ProgramFailure, ConfigError) as exc:
            return str(exc)

    with concurrent.futures.ThreadPoolExecutor(problem.workers) as pool:
        results = list(pool.map(one, jobs))
    curves: dict[str, dict] = {g.name: {"split": split, "game": g.game, "curves": {}} for g, split in games}
    for (game, algo), result in zip(jobs, results):
        entry = curves[game.name]["curves"]
        name = "discovered" if algo is None else algo
        if isinstance(result, str):
            entry[name] = {"error": result}
        else:
            entry[name] = {"exploitability": [float(x) for x in result]}
    return {"k": k, "checkpoints": list(checkpoints), "baselines": list(baselines), "games": curves}


def _baseline_curve(config: DiscoverConfig, game, algo: str, k: int, checkpoints) -> list[float]:
    """A library algorithm's exploitability at the checkpoints (trusted, in this process)."""
    if config.target == "cfr":
        result = solve(SolveConfig(game.game, algo, k, tuple(checkpoints)))
        by_iteration = {p.iteration: p.exploitability for p in result.curve}
        return [by_iteration[c] for c in checkpoints]
    result = run_psro_exact(game.game, train_solver=algo, eval_solver=config.eval_solver, iterations=k)
    return [result.nash_conv[c - 1] / result.psro.num_players for c in checkpoints]


class StoredScores:
    """A problem whose stage-2 and stage-3 scores come from the store when a program with the
    same source was scored before (a resumed run), else from the problem."""

    def __init__(self, problem, store: RunStore):
        self._problem = problem
        self._quick, self._full = {}, {}
        for p in store.programs():
            if p.get("source") is None:
                continue
            quick = (p.get("info") or {}).get("quick")
            if quick:
                self._quick[p["source"]] = quick["scores"]
            if p.get("stage", 0) >= 3:
                self._full[p["source"]] = p["scores"]

    def __getattr__(self, name):
        return getattr(self._problem, name)

    def quick(self, sources):
        return self._cached(sources, self._quick, self._problem.quick)

    def full(self, sources):
        return self._cached(sources, self._full, self._problem.full)

    @staticmethod
    def _cached(sources, cache, compute):
        todo = [s for s in sources if s not in cache]
        for s, scores in zip(todo, compute(todo) if todo else []):
            cache[s] = scores
        return [dict(cache[s]) for s in sources]
