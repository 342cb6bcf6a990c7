"""CFR+ speed: csro's vectorised engine vs OpenSpiel's C++ and Python CFR+ (docs/solvers.md).

Per game (Leduc poker, 3-player Kuhn poker) and measured side by side in this run:

- csro: ``csro.solvers.cfr.CFRSolver`` with the ``cfr+`` hooks (tree built once, not timed;
  its build time is printed separately);
- C++: ``pyspiel.CFRPlusSolver``;
- Python: ``open_spiel.python.algorithms.cfr.CFRPlusSolver`` (fewer iterations by default:
  it is slow; its ms/iteration is measured over its own run).

Prints ms per iteration, the exploitability (NashConv / players) each reaches after the same
number of iterations, and the ratios C++ / csro and Python / csro (> 1 means csro is faster).
Target in the issue: C++ / csro >= 3 on Leduc.

The exploitabilities agree to ~1e-12 up to ~100 iterations. Beyond that CFR+ on Leduc is
chaotic: last-bit rounding differences (summation order) grow by ~10x every 15 iterations
(a 1e-15 relative nudge of one regret at iteration 5 moves the exploitability at iteration 200
by 6e-5), so longer runs agree in magnitude only; see docs/solvers.md.

Usage: python bench/cfr_speed.py [--iterations 100] [--python-iterations 20]
"""

from __future__ import annotations

import argparse
import time

import pyspiel
from open_spiel.python.algorithms import cfr as os_cfr
from open_spiel.python.algorithms import exploitability as os_exploitability

from csro.solvers.cfr import CFRSolver, build_tree, make_variant

GAMES = ("leduc_poker", "kuhn_poker(players=3)")


def time_csro(game: str, iterations: int) -> tuple[float, float, float]:
    """(build seconds, ms/iteration, exploitability after ``iterations``)."""
    start = time.perf_counter()
    tree = build_tree(game)
    build = time.perf_counter() - start
    solver = CFRSolver(tree, make_variant("cfr+", iterations))
    start = time.perf_counter()
    solver.run(iterations)
    ms = (time.perf_counter() - start) / iterations * 1000
    return build, ms, solver.exploitability()


def time_cpp(game: str, iterations: int) -> tuple[float, float]:
    g = pyspiel.load_game(game)
    solver = pyspiel.CFRPlusSolver(g)
    start = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    ms = (time.perf_counter() - start) / iterations * 1000
    return ms, pyspiel.exploitability(g, solver.average_policy())


def time_python(game: str, iterations: int) -> tuple[float, float]:
    g = pyspiel.load_game(game)
    solver = os_cfr.CFRPlusSolver(g)
    start = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    ms = (time.perf_counter() - start) / iterations * 1000
    return ms, os_exploitability.nash_conv(g, solver.average_policy()) / g.num_players()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--python-iterations", type=int, default=20)
    args = parser.parse_args()

    header = (f"{'game':24s} {'engine':8s} {'iters':>6s} {'ms/iter':>9s} "
              f"{'exploitability':>16s} {'ratio':>8s}")
    print(header)
    print("-" * len(header))
    for game in GAMES:
        build, ms_csro, expl_csro = time_csro(game, args.iterations)
        ms_cpp, expl_cpp = time_cpp(game, args.iterations)
        _, _, expl_csro_py = time_csro(game, args.python_iterations)
        ms_py, expl_py = time_python(game, args.python_iterations)
        rows = [
            ("csro", args.iterations, ms_csro, expl_csro, 1.0),
            ("C++", args.iterations, ms_cpp, expl_cpp, ms_cpp / ms_csro),
            ("csro", args.python_iterations, None, expl_csro_py, None),
            ("Python", args.python_iterations, ms_py, expl_py, ms_py / ms_csro),
        ]
        for engine, iters, ms, expl, ratio in rows:
            ms_text = f"{ms:9.3f}" if ms is not None else f"{'':9s}"
            ratio_text = f"{ratio:7.1f}x" if ratio is not None else ""
            print(f"{game:24s} {engine:8s} {iters:6d} {ms_text} {expl:16.12f} {ratio_text:>8s}")
        print(f"{game:24s} csro tree build {build * 1000:.1f} ms (once per process); "
              f"|expl csro - C++| = {abs(expl_csro - expl_cpp):.1e}, "
              f"|expl csro - Python| = {abs(expl_csro_py - expl_py):.1e}")
        print()


if __name__ == "__main__":
    main()
