"""Evaluation throughput: sandboxed + batched csro runner vs a plain in-process loop.

One RRPS policy file against the 43 RoShamBo bots, ``--matches`` matches per bot, two ways
measured side by side in this run:

- reference: the same policy class executed *in this process, unsandboxed* (this is our
  own example file, not LLM code) and the bots in a plain pyspiel loop, one match at a time;
- csro: ``csro.evaluation.evaluate`` — the policy in sandboxed workers, lockstep batches,
  chunks spread over ``--processes`` runner processes.

Prints both wall times and the ratio reference / csro (> 1 means csro is faster). Target
in the foundation issue: >= 1.0 on 2 cores. Usage: python bench/eval_throughput.py
"""

from __future__ import annotations

import argparse
import pathlib
import time

import pyspiel

from csro.evaluation import evaluate, resolve
from csro.games import load_game

ROOT = pathlib.Path(__file__).resolve().parents[1]
ACTIONS = ("ROCK", "PAPER", "SCISSORS")


def reference_loop(source: str, matches: int) -> tuple[float, float]:
    """The plain loop: in-process policy, pyspiel bots. Returns (seconds, mean return)."""
    namespace: dict = {}
    exec(compile(source, "policy", "exec"), namespace)  # trusted example file, benchmark only
    agent_cls = namespace["Agent"]
    game = pyspiel.load_game("repeated_game(stage_game=matrix_rps(),num_repetitions=1000,recall=1)")
    names = pyspiel.roshambo_bot_names()
    start = time.perf_counter()
    total, count = 0.0, 0
    for name in names:
        for m in range(matches):
            seat = m % 2
            bot = pyspiel.make_roshambo_bot(1 - seat, name, 1000)
            agent = agent_cls()
            state = game.new_initial_state()
            obs = {"my_action": None, "opponent_action": None}
            while not state.is_terminal():
                mine = ACTIONS.index(agent.act(obs))
                theirs = bot.step(state)
                joint = [mine, theirs] if seat == 0 else [theirs, mine]
                state.apply_actions(joint)
                obs = {"my_action": ACTIONS[mine], "opponent_action": ACTIONS[theirs]}
            total += state.returns()[seat]
            count += 1
    return time.perf_counter() - start, total / count


def csro_run(policy_path: str, matches: int, processes: int | None) -> tuple[float, float]:
    game = load_game("rrps")
    spec = resolve(policy_path, game)
    opponents = [resolve(ref, game) for ref in game.population()]
    start = time.perf_counter()
    result = evaluate(game, [spec], opponents, matches=matches, seed=0, processes=processes)
    return time.perf_counter() - start, result.scores[0].pop_return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default=str(ROOT / "examples/policies/rrps_frequency.py"))
    parser.add_argument("--matches", type=int, default=4, help="matches per bot")
    parser.add_argument("--processes", type=int, default=None, help="csro runner processes (default: cores)")
    args = parser.parse_args()
    source = pathlib.Path(args.policy).read_text()
    ref_s, ref_ret = reference_loop(source, args.matches)
    csro_s, csro_ret = csro_run(args.policy, args.matches, args.processes)
    n = 43 * args.matches
    print(f"policy: {args.policy}  matches: {n} (43 bots x {args.matches})")
    print(f"reference (in-process, unsandboxed, plain loop): {ref_s:7.2f} s   PopReturn {ref_ret:8.2f}")
    print(f"csro (sandboxed, batched, parallel):              {csro_s:7.2f} s   PopReturn {csro_ret:8.2f}")
    print(f"ratio reference/csro: {ref_s / csro_s:.2f}  (>= 1.0 means the sandbox's cost is hidden)")


if __name__ == "__main__":
    main()
