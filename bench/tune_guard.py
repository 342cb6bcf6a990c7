"""The RRPS rule grammar's guard, tuned on the training bots and reported on the held-out ones (issue 40).

Programs written under the rule grammar (``csro.games.rrps``) are a few deterministic if-rules,
which the adaptive RoShamBo bots learn and beat. The grammar's fixed class plays the rules only
while their decayed record (``decay`` a throw) is above ``margin`` (``rule_header``). This bench
chooses ``decay`` and ``margin`` as ``csro.evaluation.tuning`` says, on the tuning split's
TRAINING bots only (``csro.games.rrps.TRAINING_BOTS``, 21 of the 43):

1. tuning: ``--programs`` rule programs sampled from the grammar with ``--seed``, each under every
   setting of ``--decays`` x ``--margins``, against the training bots, ``--matches`` a cell in the
   real sandbox; the chosen setting has the highest mean AggScore over the programs;
2. report: ``--programs`` fresh programs (seed ``--seed`` + 1) under no guard, the current default
   (``GUARD_DECAY``, ``GUARD_MARGIN``) and the chosen setting, plus the game's worked example,
   against all 43 bots; mean AggScore on the training part, the HELD-OUT part
   (``HELDOUT_BOTS``, which step 1 never plays) and the whole.

Usage: python bench/tune_guard.py [--programs 6 --matches 2 --seed 5 --decays 0.9,0.95,0.99
       --margins 0,2,3,5 --processes P]   (the defaults are the run that chose GUARD_DECAY, GUARD_MARGIN)
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

from csro.evaluation import evaluate, population_score, resolve
from csro.evaluation.policy_ref import code_policy
from csro.evaluation.tuning import GuardRow, GuardSetting, guard_report, rule_programs, tune_guard
from csro.games import load_game
from csro.games.rrps import GUARD_DECAY, GUARD_MARGIN


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def table(rows: dict[str, tuple[GuardRow, ...]], default: GuardSetting, chosen: GuardSetting) -> None:
    parts = list(rows)
    print("| guard | " + " | ".join(f"mean AggScore, {p}" for p in parts) + " | AggScore min .. max, all |")
    print("|---|" + "---|" * (len(parts) + 1))
    for i, first in enumerate(rows[parts[0]]):
        s = first.setting
        notes = [n for n, x in (("the default", default), ("chosen", chosen)) if s == x]
        label = s.label + (f" ({', '.join(notes)})" if notes else "")
        agg = [x.agg_score for x in rows[parts[-1]][i].scores]
        print(f"| {label} | " + " | ".join(f"{rows[p][i].mean_agg_score:.1f}" for p in parts) +
              f" | {min(agg):.1f} .. {max(agg):.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=6, help="rule programs sampled from the grammar, per step")
    ap.add_argument("--matches", type=int, default=2, help="matches per (program, bot) cell")
    ap.add_argument("--seed", type=int, default=5, help="seed of the tuning programs and matches (report: seed + 1)")
    ap.add_argument("--decays", default="0.9,0.95,0.99", help="the grid's decays")
    ap.add_argument("--margins", default="0,2,3,5", help="the grid's margins")
    ap.add_argument("--processes", type=int, default=None, help="runner processes (default: the cores)")
    args = ap.parse_args()

    game = load_game("rrps")
    grid = [GuardSetting(d, m) for d in floats(args.decays) for m in floats(args.margins)]
    start = time.perf_counter()
    tuning = tune_guard(game, rule_programs(args.programs, args.seed), grid, matches=args.matches, seed=args.seed,
                        processes=args.processes)
    chosen, default = tuning.chosen, GuardSetting(GUARD_DECAY, GUARD_MARGIN)
    print(f"1. tuning: {args.programs} programs (seed {args.seed}) x {len(grid)} settings against the "
          f"{len(tuning.population)} training bots, {args.matches} matches a cell: "
          f"{time.perf_counter() - start:.0f} s\n")
    print("| guard | mean AggScore, training | mean PopReturn | mean PopExpl |")
    print("|---|---|---|---|")
    for row in sorted(tuning.rows, key=lambda r: -r.mean_agg_score):
        print(f"| {row.setting.label} | {row.mean_agg_score:.1f} | "
              f"{statistics.mean(s.pop_return for s in row.scores):.1f} | "
              f"{statistics.mean(s.pop_expl for s in row.scores):.1f} |")
    print(f"\nchosen: decay {chosen.decay:g}, margin {chosen.margin:g} "
          f"(the default: decay {default.decay:g}, margin {default.margin:g})\n")

    parts = {"training": game.evaluation_refs("bots-training"), "held-out": game.evaluation_refs("bots-heldout"),
             "all 43": game.population()}
    settings = list(dict.fromkeys([GuardSetting(GUARD_DECAY, -math.inf), default, chosen]))
    start = time.perf_counter()
    report = guard_report(game, rule_programs(args.programs, args.seed + 1), settings, parts,
                          matches=args.matches, seed=args.seed + 1, processes=args.processes)
    example = evaluate(game, [code_policy("example", game.example_policy, game)],
                       [resolve(ref, game) for ref in parts["all 43"]], matches=args.matches, seed=args.seed + 1,
                       processes=args.processes)
    print(f"2. report: {args.programs} fresh programs (seed {args.seed + 1}) x {len(settings)} settings against "
          f"all 43 bots, {args.matches} matches a cell: {time.perf_counter() - start:.0f} s\n")
    table(report, default, chosen)
    print("| the game's worked example (one program) | " +
          " | ".join(f"{population_score(example.table, 'example', part).agg_score:.1f}" for part in parts.values()) +
          " | |")


if __name__ == "__main__":
    main()
