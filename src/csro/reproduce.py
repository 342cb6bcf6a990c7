"""The paper's experiments in one command: a grid of oracle × seed CSRO runs, one summary.

Hennes et al. (arXiv 2603.10098) report, per oracle, the final sigma-mixture's PopReturn,
PopExpl and AggScore (Lanctot et al. 2023, arXiv 2303.03196) on repeated RPS (K = 20,
5 seeds) and repeated Leduc (3 seeds; with the mixture's return against CFR+, AlwaysCall
and AlwaysFold). ``csro reproduce GAME`` runs that grid with whatever LLM the configuration
names. Each cell is an ordinary run directory (``DIR/cells/<oracle>-s<seed>``): running the
command again resumes the unfinished cells and reuses the finished ones, and a cell that
fails is recorded in the summary without stopping the others.

A grid is a run kind (``kind: reproduce``, ``csro.runkinds``): ``DIR/grid.json`` records it,
so ``csro resume``, ``csro status`` and ``csro report`` work on a grid directory as on any run
(``status``: every cell's progress; ``report``: the summary rewritten from the cells' stores).

The summary puts, beside our rows, the paper's published rows and reference rows measured in
the same run with the same evaluation settings (RRPS: greenberg, iocainebot, randbot; Leduc:
CFR+), so a reader sees at a glance where a model stands. Beside them, two rows without a
model, the same seeds (issue 40), unless turned off:

- the grammar frame without the model (``grammar_search``, ``csro.oracles.evolve._frame``;
  ``frame: false``, ``--no-frame``): evolve's search at the configured budget with every
  rewrite drawn from the game's grammar; only for a game with a strict policy grammar (RRPS;
  the summary's ``notes`` say why it is missing otherwise);
- the worked example (``no_model``, ``csro.oracles._baseline``; ``baseline: false``,
  ``--no-baseline``): what a search keeps of its seeds without the model.

Each model row is paired seed by seed with each of them (``paired``: the mean difference with
its 95% interval), and every row gives sigma_K's weight per kind of author
(``csro.authorship``). Our interpretation where the paper is silent: a row's figure is the
mean over seeds with a 95% Student-t interval across seeds (with one seed, the run's own 95%
interval); the end-of-run exploitability estimate (a lower bound,
``csro.scoring.exploitability_estimate``) is shown where the runs made one.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import pathlib
import time
from typing import Callable, Literal, Sequence

import numpy as np
import yaml
from scipy import stats

from pydantic import Field

from csro import events, runs
from csro.authorship import by_author_text, mean_weights, model_weight, weight_by_author
from csro.config import RunConfig, RunRoot, apply_overrides, parse_config
from csro.errors import ConfigError, CsroError, ProviderStopped, StoreError
from csro.evaluation import evaluate, resolve
from csro.games import CodeGame, load_game
from csro.store import RunStore

CONFIGS = pathlib.Path(__file__).resolve().parents[2] / "configs"
GRID_FILE = "grid.json"
METRICS = ("pop_return", "pop_expl", "agg_score")
LABELS = {"pop_return": "PopReturn", "pop_expl": "PopExpl", "agg_score": "AggScore"}
BASELINE = "no_model"  # the worked example, no LLM call (csro.oracles._baseline)
FRAME = "grammar_search"  # the grammar frame searched without the model (csro.oracles.evolve._frame)
BASELINES = {FRAME: "no model: grammar frame (baseline)", BASELINE: "no model: worked example (baseline)"}
MODEL_WRITTEN = "sigma_model_written"  # sigma_K's weight on the programs the model wrote (csro.authorship)
BY_AUTHOR = "sigma_by_author"  # sigma_K's weight per kind of author (csro.authorship.weight_by_author)
PART = "agg_score@"  # a row's AggScore on a named part of the evaluation population (``part_agg_score``)

# The paper's published rows (Hennes et al. 2026; bots from OpenSpiel's 43x43 table, 1000 games
# a cell): name -> PopReturn, PopExpl, AggScore, then Leduc's returns vs CFR+, AlwaysCall, AlwaysFold.
PAPER: dict[str, list[tuple]] = {
    "rrps": [
        ("CSRO AlphaEvolve (desc.)", 50.5, 25.2, 25.4),
        ("CSRO LinearRefinement (code, top-5)", 159.8, 37.7, 122.1),
        ("CSRO ZeroShot (desc.)", 130.2, 66.7, 63.5),
        ("CSRO ZeroShot, no opponent input", 135.3, 614.2, -478.9),
        ("PSRO with IMPALA (LSTM) oracle", -108.9, 423.2, -532.1),
        ("LLM agent, Chinchilla 70B", 201.0, 45.8, 155.2),
        ("ContRM", 164.8, 16.3, 148.5),
        ("greenberg (bot)", 288.15, 3.65, 284.50),
        ("iocainebot (bot)", 255.00, 5.01, 250.00),
        ("randbot (bot)", 0.23, 1.20, -0.96),
    ],
    "leduc": [
        ("CSRO AlphaEvolve", 49.3, 4.4, 44.9, -4.4, 110.3, 42.0),
        ("CSRO LinearRefinement", 43.8, 9.8, 34.0, -9.8, 83.8, 57.3),
        ("CSRO ZeroShot", 40.4, 19.6, 20.7, -19.6, 99.7, 41.0),
        ("PSRO-IMPALA", 13.3, 58.4, -45.0, -58.4, 57.7, 40.7),
        ("CFR+", 39.8, 0.0, 39.8, 0.0, 62.1, 57.4),
    ],
}
REFERENCES = {"rrps": ("builtin:greenberg", "builtin:iocainebot", "builtin:randbot"), "leduc": ("builtin:cfr_plus",)}
LEDUC_COLUMNS = ("builtin:cfr_plus", "builtin:always_call", "builtin:always_fold")


@dataclasses.dataclass(frozen=True)
class Grid:
    """What one reproduction runs: every oracle with every seed, from one base configuration."""

    game: str
    oracles: tuple[str, ...]
    seeds: tuple[int, ...]
    base: dict

    def cell_name(self, oracle: str, seed: int) -> str:
        return f"{oracle}-s{seed}"

    def cells(self) -> list[tuple[str, int, str]]:
        """(oracle, seed, cell name) of every cell, oracle by oracle."""
        return [(oracle, seed, self.cell_name(oracle, seed)) for oracle in self.oracles for seed in self.seeds]

    def cell_config(self, oracle: str, seed: int) -> RunConfig:
        return parse_config(apply_overrides(self.base, [f"oracle.kind={oracle}", f"seed={seed}"]))


class GridConfig(RunRoot):
    """A reproduction grid (``kind: reproduce``): every oracle with every seed, each cell a CSRO
    run of ``base`` with the cell's oracle kind and seed. ``csro reproduce GAME`` builds one from
    ``configs/reproduce-GAME.yaml``."""

    kind: Literal["reproduce"] = Field("reproduce", description="the kind of run (a grid of CSRO runs)")
    game: Literal["rrps", "leduc"] = Field("rrps", description="the experiment whose paper rows the summary shows")
    oracles: list[str] = Field(["zero_shot", "linear_refinement"], description="oracle kinds, one row each")
    baseline: bool = Field(True, description=f"add the no-model row ({BASELINE}: the game's example policy, no LLM "
                                             "call) with the same seeds, so the table shows what the model added")
    frame: bool = Field(True, description=f"add the grammar-without-model row ({FRAME}: evolve's search with every "
                                          "rewrite drawn from the game's grammar, no LLM call) with the same seeds, "
                                          "where the game has a strict policy grammar")
    seeds: int = Field(3, ge=1, description="seeds per oracle (first_seed, first_seed + 1, ...)")
    first_seed: int = Field(0, ge=0, description="the first seed: another grid's seeds add to a table with new draws")
    base: RunConfig = Field(RunConfig(), description="every cell's configuration (its oracle.kind and seed are the cell's)")


def grid_config(game: str, *, config: pathlib.Path | None, oracles: Sequence[str], seeds: int,
                overrides: Sequence[str], baseline: bool = True, first_seed: int = 0, frame: bool = True) -> GridConfig:
    """The grid of ``game`` (``rrps`` or ``leduc``): its base config (``configs/reproduce-GAME.yaml``
    unless ``config`` is given) with ``overrides``; with ``baseline`` and ``frame``, the no-model
    rows too."""
    if game not in PAPER:
        raise ConfigError(f"reproduce: unknown experiment {game!r}; known: {', '.join(PAPER)}")
    if seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {seeds}")
    if first_seed < 0:
        raise ConfigError(f"--first-seed must be at least 0, got {first_seed}")
    path = config or CONFIGS / f"reproduce-{game}.yaml"
    try:
        base = yaml.safe_load(pathlib.Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return GridConfig(game=game, oracles=list(oracles), seeds=seeds, first_seed=first_seed, baseline=baseline,
                      frame=frame, base=parse_config(apply_overrides(base, list(overrides))))


def make_grid(config: GridConfig) -> Grid:
    """The grid a configuration runs, validated before anything runs (an unknown oracle fails
    here): the configured rows, then the grammar frame without the model (where the game has a
    strict grammar) and the worked example, each unless it is off or already named."""
    extra = [FRAME] if config.frame and FRAME not in config.oracles and _has_grammar(config.base.game) else []
    extra += [BASELINE] if config.baseline and BASELINE not in config.oracles else []
    oracles = tuple(config.oracles) + tuple(extra)
    grid = Grid(config.game, oracles, tuple(range(config.first_seed, config.first_seed + config.seeds)),
                config.base.to_dict())
    for oracle in grid.oracles:
        grid.cell_config(oracle, grid.seeds[0])
    return grid


def _has_grammar(game: str) -> bool:
    """Whether ``game`` has a strict policy grammar (``CodeGame.policy_grammar``): what the
    grammar-without-model row draws from."""
    return load_game(game).policy_grammar() is not None


class GridStore:
    """A grid directory as the run-kind registry reads it: ``grid.json`` is its recorded
    configuration (grids made before the registry read the same)."""

    db_name = GRID_FILE

    def __init__(self, directory: pathlib.Path, record: dict):
        self.directory = directory
        self.record = record

    @classmethod
    def open(cls, directory: str | pathlib.Path) -> "GridStore":
        path = pathlib.Path(directory) / GRID_FILE
        if not path.is_file():
            raise StoreError(f"no grid at {directory} ({GRID_FILE} not found)")
        return cls(pathlib.Path(directory), json.loads(path.read_text()))

    def __enter__(self) -> "GridStore":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def config(self) -> dict:
        """The grid's configuration (``GridConfig`` as a mapping; its oracles already name the
        baseline row if it has one)."""
        r = self.record
        return {"kind": "reproduce", "game": r["game"], "oracles": r["oracles"], "baseline": False, "frame": False,
                "seeds": len(r["seeds"]), "first_seed": min(r["seeds"]), "base": r["base"]}

    def grid(self) -> Grid:
        r = self.record
        return Grid(r["game"], tuple(r["oracles"]), tuple(r["seeds"]), r["base"])


def start(config: GridConfig, directory: str | pathlib.Path, hooks: runs.Hooks = runs.Hooks()) -> pathlib.Path:
    """Run (or continue) the grid of ``config`` in ``directory``; the summary page's path."""
    run_grid(make_grid(config), pathlib.Path(directory), hooks=hooks)
    return pathlib.Path(directory) / "summary.html"


def resume(directory: str | pathlib.Path, hooks: runs.Hooks = runs.Hooks()) -> pathlib.Path:
    """Continue the grid recorded in ``directory``."""
    run_grid(_recorded(directory), pathlib.Path(directory), hooks=hooks)
    return pathlib.Path(directory) / "summary.html"


def status(directory: str | pathlib.Path) -> dict:
    """Where the grid stands: each cell's iterations done (of K), whether it finished, and the
    summary's rows once written."""
    directory = pathlib.Path(directory)
    grid = _recorded(directory)
    cells = {name: _cell_status(directory / "cells" / name) for _, _, name in grid.cells()}
    summary = directory / "summary.json"
    return {"game": grid.game, "oracles": list(grid.oracles), "seeds": list(grid.seeds),
            "iterations": grid.base["iterations"], "cells": cells,
            "done": all(c["done"] for c in cells.values()) and summary.is_file(),
            "ours": json.loads(summary.read_text())["ours"] if summary.is_file() else None}


def _recorded(directory: str | pathlib.Path) -> Grid:
    """The grid recorded in ``directory``."""
    with GridStore.open(directory) as store:
        return store.grid()


def _cell_status(directory: pathlib.Path) -> dict:
    if not (directory / "run.db").exists():
        return {"iteration": None, "done": False}
    s = runs.status(directory)
    return {"iteration": s["iteration"], "done": s["done"]}


def report(directory: str | pathlib.Path) -> pathlib.Path:
    """Rewrite the summary files from the cells' stores (no cell is run)."""
    directory = pathlib.Path(directory)
    grid = _recorded(directory)
    cells = {name: _outcome(directory / "cells" / name) if (directory / "cells" / name / "run.db").exists()
             else {"error": "not started"} for _, _, name in grid.cells()}
    write_summary(summarize(grid, cells, _references(grid, directory / "references.json")), directory)
    return directory / "summary.html"


def run_grid(grid: Grid, directory: pathlib.Path, *, hooks: runs.Hooks = runs.Hooks()) -> dict:
    """Run (or continue) every cell, measure the reference rows, write the summary files. Each
    cell's progress is a ``grid_cell`` event to ``hooks``: ``{"cell", "what"}`` and, as it
    starts, the grid's ``done`` and ``left`` cells and ``eta_s`` (``CellClock``)."""
    directory.mkdir(parents=True, exist_ok=True)
    recorded = directory / GRID_FILE
    record = json.loads(json.dumps(dataclasses.asdict(grid)))
    if recorded.exists() and not same_grid(json.loads(recorded.read_text()), record):
        raise ConfigError(f"{directory} holds another grid (see {recorded}); choose a new --out")
    recorded.write_text(json.dumps(record, indent=1))
    on_event = hooks.on_event or (lambda step, kind, data: None)
    clock = CellClock(grid, {name for _, _, name in grid.cells() if _cell_status(directory / "cells" / name)["done"]})
    cells = {}
    for oracle, seed, name in grid.cells():
        if name not in clock.done:
            on_event(0, events.GRID_CELL, {"cell": name, "what": "next", **clock.where()})
        started = time.monotonic()
        cells[name] = _run_cell(grid.cell_config(oracle, seed), directory / "cells" / name, hooks,
                                lambda what, name=name: on_event(0, events.GRID_CELL, {"cell": name, "what": what}))
        clock.finished(name, oracle, time.monotonic() - started)
    references = _references(grid, directory / "references.json")
    summary = summarize(grid, cells, references)
    write_summary(summary, directory)
    return summary


class CellClock:
    """Cells done and left of a grid being run, and the time left: each cell left that needs
    work is estimated at the mean time of the cells of its oracle this call has run (an oracle
    with none yet: the mean over all run so far; before any, unknown). Our choice: cells finished
    before this call count as done and cost nothing; the reference rows (seconds) are not counted."""

    def __init__(self, grid: Grid, finished: set[str]):
        self.oracle = {name: oracle for oracle, _, name in grid.cells()}
        self.done = set(finished)
        self.seconds: dict[str, list[float]] = {}

    def finished(self, name: str, oracle: str, seconds: float) -> None:
        if name not in self.done:
            self.seconds.setdefault(oracle, []).append(seconds)
        self.done.add(name)

    def where(self) -> dict:
        """``{"done", "left", "eta_s"}`` (``eta_s`` None while nothing has been timed)."""
        left = [name for name in self.oracle if name not in self.done]
        every = [s for times in self.seconds.values() for s in times]
        if not every:
            return {"done": len(self.done), "left": len(left), "eta_s": None}
        eta = sum(float(np.mean(self.seconds.get(self.oracle[name], every))) for name in left)
        return {"done": len(self.done), "left": len(left), "eta_s": eta}


def same_grid(recorded: dict, record: dict) -> bool:
    """Whether a grid recorded in a directory is ``record``. The recorded base configuration is
    read as one first, so that a field csro gained since (at its default) does not make a grid
    another one and a grid stays resumable across versions."""
    try:
        recorded = dict(recorded, base=parse_config(recorded["base"]).to_dict())
    except (ConfigError, KeyError, TypeError):
        return False
    return recorded == record


def _run_cell(config: RunConfig, directory: pathlib.Path, hooks: runs.Hooks, say: Callable[[str], None]) -> dict:
    """One cell's outcome: its final record and per-iteration metrics, or the error it ended with.
    A provider that cannot answer (``ProviderStopped``) stops the whole grid, resumably: the
    next cells would only wait for it in turn."""
    try:
        if (directory / "run.db").exists():
            say("resuming")
            runs.resume(directory, hooks)
        else:
            say("starting")
            runs.start(config, directory, hooks)
        outcome = _outcome(directory)
    except ProviderStopped:
        say("stopped: the LLM provider cannot answer")
        raise
    except CsroError as exc:
        say(f"failed: {exc}")
        return {"error": str(exc)}
    say("done")
    return outcome


def _outcome(directory: pathlib.Path) -> dict:
    """A cell's final record, per-iteration metrics and the latest sigma's weight on the
    programs the model wrote and per kind of author (the mean over players where each has a
    population), from its store."""
    with RunStore.open(directory) as store:
        final, iterations = store.final(), store.iterations()
        latest = runs.latest_sigmas(store.policies(), store.sigmas())
    rows = [{k: d.get(k) for k in ("iteration", *METRICS)} for d in iterations]
    if final is None:
        return {"error": "unfinished", "iterations": rows}
    written = float(np.mean([model_weight([r.author for r in members], sigma) for members, sigma in latest]))
    by_player = [weight_by_author([r.author for r in members], sigma) for members, sigma in latest]
    by_author = mean_weights(by_player)
    return {"final": final, "iterations": rows, MODEL_WRITTEN: written, BY_AUTHOR: by_author}


def _references(grid: Grid, cache: pathlib.Path) -> dict[str, dict]:
    """The reference policies scored exactly as ``csro eval`` scores them, with the base
    configuration's evaluation population, matches and seed (cached in the grid directory)."""
    if cache.exists():
        return json.loads(cache.read_text())
    config = parse_config(grid.base)
    game = load_game(config.game)
    refs = game.evaluation_refs(config.evaluation.population)
    limits = config.sandbox.limits()
    out = {}
    for ref in REFERENCES[grid.game]:
        result = evaluate(game, [resolve(ref, game)], [resolve(r, game) for r in refs],
                          matches=config.evaluation.matches_per_opponent, seed=config.seed, limits=limits)
        out[ref] = result.scores[0].to_dict()
    cache.write_text(json.dumps(out, indent=1))
    return out


def mean_ci(values: Sequence[float], single_ci: float | None) -> tuple[float, float | None]:
    """Mean over seeds with a 95% Student-t half-width (one seed: the run's own interval)."""
    if len(values) == 1:
        return values[0], single_ci
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a)))


def evaluation_parts(game: CodeGame, population: str | Sequence[str] = "default") -> dict[str, list[str]]:
    """The named parts of ``game``'s evaluation ``population`` that a grid reports AggScore on
    beside the whole, with their references (RRPS: the tuning split's ``bots-training`` and
    ``bots-heldout``, issue 40); none where the game is not zero-sum (``part_agg_score``)."""
    if not game.zero_sum:
        return {}
    evaluated = set(game.evaluation_refs(population))
    named = {name: game.evaluation_refs(name) for name in game.named_populations() if name != "default"}
    return {name: refs for name, refs in named.items() if set(refs) < evaluated}


def part_agg_score(score: dict, refs: Sequence[str]) -> float | None:
    """AggScore of a scored mixture on the part ``refs`` of its evaluation population, from its
    per-opponent returns (``population_score``): PopReturn over the part minus PopExpl over it.
    In a zero-sum game an opponent's return against the mixture is minus the mixture's against
    it, so PopExpl on the part is minus the least of those returns. None where the score lacks
    an opponent of the part (it was evaluated on another population)."""
    per = score.get("per_opponent") or {}
    if not refs or any(r not in per for r in refs):
        return None
    values = [per[r] for r in refs]
    return float(np.mean(values)) + min(values)


def _part_values(finals: Sequence[dict], refs: Sequence[str]) -> list[float]:
    values = [part_agg_score(f, refs) for f in finals]
    return [v for v in values if v is not None]


def summarize(grid: Grid, cells: dict[str, dict], references: dict[str, dict]) -> dict:
    """Our rows (one per oracle), the reference rows, the paper's rows, and the curves."""
    ours, curves = [], {}
    evaluated = grid.base.get("evaluation", {}).get("population", "default")
    parts = evaluation_parts(load_game(grid.base["game"]), evaluated)
    for oracle in grid.oracles:
        done = [cells[grid.cell_name(oracle, s)] for s in grid.seeds]
        finals = [c["final"] for c in done if c.get("final")]
        name = BASELINES.get(oracle, f"{oracle} (ours)")
        row = {"name": name, "seeds": len(finals), "failed": len(done) - len(finals)}
        for m in METRICS:
            row[m] = mean_ci([f[m] for f in finals], finals[0]["ci95"][m]) if finals else (None, None)
        for part, bots in parts.items():
            vals = _part_values(finals, bots)
            row[PART + part] = mean_ci(vals, None) if vals else (None, None)
        if grid.game == "leduc":
            for col in LEDUC_COLUMNS:
                vals = [f["per_opponent"][col] for f in finals if col in f.get("per_opponent", {})]
                row[col] = mean_ci(vals, None) if vals else (None, None)
        written = [c[MODEL_WRITTEN] for c in done if MODEL_WRITTEN in c]
        row[MODEL_WRITTEN] = mean_ci(written, None) if written else (None, None)
        by_author = [c[BY_AUTHOR] for c in done if BY_AUTHOR in c]
        row[BY_AUTHOR] = mean_weights(by_author) if by_author else None
        estimates = [f["expl_estimate"]["lower_bound"] for f in finals
                     if (f.get("expl_estimate") or {}).get("lower_bound") is not None]
        row["expl_estimate"] = mean_ci(estimates, None) if estimates else (None, None)
        ours.append(row)
        curves[oracle] = _curve([c.get("iterations", []) for c in done])
    refs = []
    for ref, score in references.items():
        row = {"name": f"{ref.removeprefix('builtin:')} (measured here)", "seeds": 1, "failed": 0,
               "expl_estimate": (None, None)}
        for m in METRICS:
            row[m] = (score[m], score["ci95"][m])
        for part, bots in parts.items():
            row[PART + part] = (part_agg_score(score, bots), None)
        if grid.game == "leduc":
            for col in LEDUC_COLUMNS:
                row[col] = (score["per_opponent"].get(col), None)
        refs.append(row)
    paper = []
    for values in PAPER[grid.game]:
        row = {"name": f"{values[0]} (paper)", **{m: (v, None) for m, v in zip(METRICS, values[1:4])}}
        for col, v in zip(LEDUC_COLUMNS, values[4:]):
            row[col] = (v, None)
        paper.append(row)
    return {"game": grid.game, "oracles": list(grid.oracles), "seeds": list(grid.seeds),
            "iterations": grid.base["iterations"], "model": f"{grid.base['llm']['provider']}:{grid.base['llm'].get('model')}",
            "parts": list(parts), "ours": ours, "paired": paired(grid, cells, parts), "references": refs,
            "paper": paper, "curves": curves,
            "notes": _notes(grid), "errors": {name: c["error"] for name, c in cells.items() if "error" in c}}


def paired(grid: Grid, cells: dict[str, dict], parts: dict[str, list[str]]) -> list[dict]:
    """Each model row minus each no-model row (``BASELINES``), seed by seed over the seeds both
    finished: the mean difference of every metric (and of AggScore on each part of the
    evaluation population) with its 95% Student-t interval (one pair: no interval)."""
    out = []
    for oracle in grid.oracles:
        if oracle in BASELINES:
            continue
        for baseline in (b for b in BASELINES if b in grid.oracles):
            pairs = [(cells[grid.cell_name(oracle, s)].get("final"), cells[grid.cell_name(baseline, s)].get("final"))
                     for s in grid.seeds]
            pairs = [(a, b) for a, b in pairs if a and b]
            row = {"name": f"{oracle} − {BASELINES[baseline]}", "oracle": oracle, "baseline": baseline,
                   "seeds": len(pairs)}
            for m in METRICS:
                row[m] = mean_ci([a[m] - b[m] for a, b in pairs], None) if pairs else (None, None)
            for part, refs in parts.items():
                scored = ((part_agg_score(a, refs), part_agg_score(b, refs)) for a, b in pairs)
                diffs = [x - y for x, y in scored if x is not None and y is not None]
                row[PART + part] = mean_ci(diffs, None) if diffs else (None, None)
            out.append(row)
    return out


def _notes(grid: Grid) -> list[str]:
    """Why a no-model row is missing where it is."""
    if FRAME in grid.oracles:
        return []
    if not _has_grammar(grid.base["game"]):
        return [f"no grammar-without-model row: {grid.base['game']} has no strict policy grammar (its fallback "
                "skeleton leaves the method bodies to a model)"]
    return ["no grammar-without-model row: turned off (--no-frame)"]


def _curve(per_seed: list[list[dict]]) -> dict[str, list]:
    """AggScore and PopReturn over iterations, averaged over the seeds that reached each one."""
    by_iteration: dict[int, list[dict]] = {}
    for records in per_seed:
        for d in records:
            if d.get("agg_score") is not None:
                by_iteration.setdefault(d["iteration"], []).append(d)
    its = sorted(by_iteration)
    return {"iteration": its, **{m: [float(np.mean([d[m] for d in by_iteration[i]])) for i in its] for m in METRICS}}


def _part_columns(summary: dict) -> list[tuple[str, str]]:
    return [(PART + part, f"AggScore {part}") for part in summary.get("parts", [])]


def _columns(summary: dict) -> list[tuple[str, str]]:
    game = summary["game"]
    cols = [(m, LABELS[m]) for m in METRICS] + _part_columns(summary)
    if game == "leduc":
        cols += [(c, "vs " + c.removeprefix("builtin:")) for c in LEDUC_COLUMNS]
    return cols + [("expl_estimate", "Expl. lower bound"), (BY_AUTHOR, "sigma by author")]


def _cell(value: tuple[float | None, float | None], digits: int = 1) -> str:
    v, ci = value
    if v is None:
        return "-"
    return f"{v:.{digits}f}" if ci is None else f"{v:.{digits}f} ± {ci:.{digits}f}"


def table_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """The summary table as text cells: header and rows (ours, references, paper)."""
    cols = _columns(summary)
    header = ["method", "seeds"] + [label for _, label in cols]
    rows = []
    for row in summary["ours"] + summary["references"] + summary["paper"]:
        seeds = "" if "seeds" not in row else f"{row['seeds']}" + (f" ({row['failed']} failed)" if row.get("failed") else "")
        rows.append([row["name"], seeds] + [(by_author_text(row[key]) if row.get(key) else "-") if key == BY_AUTHOR
                                            else _cell(row.get(key, (None, None))) for key, _ in cols])
    return header, rows


def paired_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """The paired differences as text cells: header and rows (model row − no-model row)."""
    cols = [(m, LABELS[m]) for m in METRICS] + _part_columns(summary)
    header = ["difference", "seeds paired"] + [label for _, label in cols]
    return header, [[row["name"], str(row["seeds"])] + [_cell(row.get(key, (None, None))) for key, _ in cols]
                    for row in summary.get("paired", [])]


def markdown(summary: dict) -> str:
    header, rows = table_rows(summary)
    lines = [f"# csro reproduce {summary['game']}: {summary['model']}, K = {summary['iterations']}, "
             f"seeds {summary['seeds']}", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    header, rows = paired_rows(summary)
    if rows:
        lines += ["", "Paired by seed (model row − no-model row; mean ± 95% CI over the seeds both finished):", "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    if summary.get("notes"):
        lines += [""] + [f"Note: {n}" for n in summary["notes"]]
    if summary["errors"]:
        lines += ["", "Cells that failed:"] + [f"- {name}: {err}" for name, err in summary["errors"].items()]
    return "\n".join(lines) + "\n"


def write_summary(summary: dict, directory: pathlib.Path) -> None:
    """``summary.md``, ``summary.csv``, ``summary.json`` and ``summary.html`` in ``directory``."""
    from csro.report import reproduce_page  # the report package draws; import here, it imports much

    header, rows = table_rows(summary)
    (directory / "summary.md").write_text(markdown(summary), encoding="utf-8")
    buf = io.StringIO()
    csv.writer(buf).writerows([header] + rows)
    (directory / "summary.csv").write_text(buf.getvalue(), encoding="utf-8")
    (directory / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (directory / "summary.html").write_text(reproduce_page(summary, header, rows, *paired_rows(summary)),
                                            encoding="utf-8")
