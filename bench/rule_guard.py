"""The RRPS rule grammar's guard (issue 26): what it does to the model's rule programs.

Programs written under the rule grammar (``csro.games.rrps``) are a few deterministic
if-rules, which the adaptive RoShamBo bots learn and beat. The grammar's fixed class plays
the rules only while their decayed record (``decay`` a throw) is above ``margin``, and throws
at random otherwise (``rule_header``). This benchmark samples ``--programs`` rule programs
from the grammar (``csro.gbnf.sample``, seeded), plays each under every ``--settings`` guard
against the 43 bots (``--matches`` a cell, in the real sandbox), and prints the mean
PopReturn, PopExpl and AggScore per setting, beside the same programs with no guard (the
reference, measured in this run) and the game's hand-written example policy.

Usage: python bench/rule_guard.py [--programs 8 --matches 2 --settings 0.95:0,0.95:3 --seed 5]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time

from csro.evaluation import evaluate
from csro.evaluation.policy_ref import code_policy, resolve
from csro.games import load_game
from csro.games.rrps import GUARD_DECAY, GUARD_MARGIN, RRPS_RULES, rule_header
from csro.gbnf import sample


def parse_settings(text: str) -> list[tuple[float, float]]:
    """``DECAY:MARGIN,...`` as pairs; ``none`` is no guard."""
    settings = []
    for item in text.split(","):
        if item.strip() == "none":
            settings.append((GUARD_DECAY, -math.inf))
            continue
        decay, margin = item.split(":")
        settings.append((float(decay), float(margin)))
    return settings


def label(decay: float, margin: float) -> str:
    if margin == -math.inf:
        return "no guard (reference)"
    current = " (the default)" if (decay, margin) == (GUARD_DECAY, GUARD_MARGIN) else ""
    return f"decay {decay:g}, margin {margin:g}{current}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=8, help="rule programs sampled from the grammar")
    ap.add_argument("--matches", type=int, default=2, help="matches per (program, bot) cell")
    ap.add_argument("--settings", default=f"0.95:0,0.9:2,0.99:3,{GUARD_DECAY:g}:{GUARD_MARGIN:g}",
                    help="guards to compare, DECAY:MARGIN,... (no guard is always measured)")
    ap.add_argument("--seed", type=int, default=5, help="seed of the sampled programs")
    args = ap.parse_args()

    game = load_game("rrps")
    rng = random.Random(args.seed)
    bodies = [sample(RRPS_RULES, rng) for _ in range(args.programs)]
    settings = [(GUARD_DECAY, -math.inf)] + parse_settings(args.settings)
    specs = [code_policy(f"s{i}-p{j}", rule_header(decay, margin) + body, game)
             for i, (decay, margin) in enumerate(settings) for j, body in enumerate(bodies)]
    specs.append(code_policy("example", game.example_policy, game))
    opponents = [resolve(ref, game) for ref in game.population()]
    print(f"{args.programs} rule programs x {len(settings)} guards + the example, against "
          f"{len(opponents)} bots, {args.matches} matches a cell ...", flush=True)
    start = time.perf_counter()
    result = evaluate(game, specs, opponents, matches=args.matches, seed=args.seed)
    scores = {spec.name: score for spec, score in zip(specs, result.scores)}
    print(f"played in {time.perf_counter() - start:.0f} s\n")

    print("| guard | mean PopReturn | mean PopExpl | mean AggScore | AggScore min .. max |")
    print("|---|---|---|---|---|")
    for i, (decay, margin) in enumerate(settings):
        rows = [scores[f"s{i}-p{j}"] for j in range(args.programs)]
        agg = [s.agg_score for s in rows]
        print(f"| {label(decay, margin)} | {statistics.mean(s.pop_return for s in rows):.1f} | "
              f"{statistics.mean(s.pop_expl for s in rows):.1f} | {statistics.mean(agg):.1f} | "
              f"{min(agg):.1f} .. {max(agg):.1f} |")
    example = scores["example"]
    print(f"| the game's example policy (one program) | {example.pop_return:.1f} | {example.pop_expl:.1f} | "
          f"{example.agg_score:.1f} | |")


if __name__ == "__main__":
    main()
