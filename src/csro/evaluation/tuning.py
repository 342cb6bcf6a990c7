"""Settings chosen from data, on a training population only (issue 40): the RRPS rule grammar's guard.

The rule grammar's fixed class (``csro.games.rrps.rule_header``) plays the model's rules only while
their record, decayed by ``decay`` a throw, is above ``margin``. Those two numbers are chosen from
data, so they are chosen against a population its results are not reported on: the tuning split's
training bots (``bots-training``, ``csro.games.rrps.TRAINING_BOTS``), never the held-out ones.

The procedure (``tune_guard``), in steps:
  1. sample rule programs from the grammar (``csro.gbnf.sample``, seeded): what the rules of a model
     writing under the grammar may be, with no model in the loop;
  2. play every program under every setting of a grid against the training population, in the real
     sandbox (``csro.evaluation.evaluate``), ``matches`` a cell;
  3. choose the setting with the highest mean AggScore over the programs (the first in grid order
     on a tie).
Reporting (``guard_report``) plays fresh programs (another seed) under the settings to compare
against any population and scores them on its parts, e.g. the held-out bots and all 43.

Our construction; the paper has no guard (Hennes et al., arXiv 2603.10098, write RRPS policies
freely). AggScore is the benchmark's (Lanctot et al. 2023, arXiv 2303.03196; ``metrics``).
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from typing import Mapping, Sequence

from csro.evaluation.evaluate import evaluate
from csro.evaluation.metrics import PopulationScore, population_score
from csro.evaluation.payoff_table import PayoffTable
from csro.evaluation.policy_ref import code_policy, resolve
from csro.games import CodeGame
from csro.games.rrps import RRPS_RULES, rule_header
from csro.gbnf import sample
from csro.policies import SandboxLimits

TRAINING = "bots-training"  # the population a guard is tuned on (``CodeGame.named_populations``)


@dataclasses.dataclass(frozen=True)
class GuardSetting:
    """One guard: the rules play while their record, decayed by ``decay``, is above ``margin``
    (``margin`` -inf: no guard, the class before it)."""

    decay: float
    margin: float

    @property
    def label(self) -> str:
        if self.margin == -math.inf:
            return "no guard"
        return f"decay {self.decay:g}, margin {self.margin:g}"


@dataclasses.dataclass(frozen=True)
class GuardRow:
    """One setting's scores: one ``PopulationScore`` per program."""

    setting: GuardSetting
    scores: tuple[PopulationScore, ...]

    @property
    def mean_agg_score(self) -> float:
        return statistics.mean(s.agg_score for s in self.scores)


@dataclasses.dataclass(frozen=True)
class GuardTuning:
    """What ``tune_guard`` played and chose: the grid's rows on ``population`` and the best row."""

    population: tuple[str, ...]
    rows: tuple[GuardRow, ...]

    @property
    def chosen(self) -> GuardSetting:
        return max(self.rows, key=lambda r: r.mean_agg_score).setting  # max keeps the first on a tie


def rule_programs(count: int, seed: int) -> list[str]:
    """``count`` bodies of ``rules()`` sampled from the RRPS rule grammar with ``seed``."""
    rng = random.Random(seed)
    return [sample(RRPS_RULES, rng) for _ in range(count)]


def _play(game: CodeGame, bodies: Sequence[str], settings: Sequence[GuardSetting], refs: Sequence[str], *,
          matches: int, seed: int, limits: SandboxLimits, processes: int | None) -> PayoffTable:
    specs = [code_policy(_name(i, j), rule_header(s.decay, s.margin) + body, game)
             for i, s in enumerate(settings) for j, body in enumerate(bodies)]
    opponents = [resolve(ref, game) for ref in refs]
    return evaluate(game, specs, opponents, matches=matches, seed=seed, limits=limits, processes=processes).table


def _name(setting: int, program: int) -> str:
    return f"s{setting}-p{program}"


def _rows(table: PayoffTable, settings: Sequence[GuardSetting], programs: int,
          refs: Sequence[str]) -> tuple[GuardRow, ...]:
    return tuple(GuardRow(s, tuple(population_score(table, _name(i, j), list(refs)) for j in range(programs)))
                 for i, s in enumerate(settings))


def tune_guard(game: CodeGame, bodies: Sequence[str], grid: Sequence[GuardSetting], *, matches: int, seed: int,
               limits: SandboxLimits = SandboxLimits(), processes: int | None = None) -> GuardTuning:
    """Play ``bodies`` under every setting of ``grid`` against the training bots only, and choose
    (``GuardTuning.chosen``). No other population is resolved or played."""
    refs = game.evaluation_refs(TRAINING)
    table = _play(game, bodies, grid, refs, matches=matches, seed=seed, limits=limits, processes=processes)
    return GuardTuning(tuple(refs), _rows(table, grid, len(bodies), refs))


def guard_report(game: CodeGame, bodies: Sequence[str], settings: Sequence[GuardSetting],
                 parts: Mapping[str, Sequence[str]], *, matches: int, seed: int,
                 limits: SandboxLimits = SandboxLimits(),
                 processes: int | None = None) -> dict[str, tuple[GuardRow, ...]]:
    """``bodies`` under each of ``settings`` played once against every reference of ``parts`` and
    scored on each part (e.g. ``{"held-out": ..., "all 43": ...}``): the rows per part's name."""
    refs = list(dict.fromkeys(ref for part in parts.values() for ref in part))
    table = _play(game, bodies, settings, refs, matches=matches, seed=seed, limits=limits, processes=processes)
    return {name: _rows(table, settings, len(bodies), part) for name, part in parts.items()}
