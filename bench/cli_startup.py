"""How long the ``csro`` command takes to start, against the interpreter's own start.

Measured side by side in this run, best of ``--repeat`` wall times of whole processes:

- the reference: ``python -c pass`` (the interpreter's start, site included);
- ``csro --help`` and ``csro status DIR`` (``DIR`` a finished CSRO run: the legacy fixture of
  tests/fixtures/legacy, unpacked into a temporary directory);
- ``csro solve --game leduc_poker --algo cfr+ --iterations N`` against OpenSpiel's C++ CFR+
  (``pyspiel.CFRPlusSolver``) for the same N iterations, each as a whole process.

Prints each command's time beyond the reference (the target of issue 27: under 0.3 s for
``--help`` and ``status``) and its ratio to the reference, and for ``solve`` the ratio of the
C++ process to csro's (the issue's target: >= 10, i.e. csro's start no longer hides its engine;
csro's ~0.35 s of start and tree building is fixed, so the ratio grows with N: measured on the
shared 2-core VM, 2.35 at N = 100 and 13.9 at N = 1000, against 2.3 for main at N = 1000).
Timings depend on the machine and its load; compare ratios measured in the same run only.

Usage: python bench/cli_startup.py [--repeat 5] [--iterations 1000]
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import time

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "legacy" / "csro.tar.gz"
CPP_CFR = ("import pyspiel, sys; g = pyspiel.load_game('leduc_poker'); s = pyspiel.CFRPlusSolver(g)\n"
           "for _ in range(int(sys.argv[1])): s.evaluate_and_update_policy()\n"
           "print(pyspiel.exploitability(g, s.average_policy()))")


def best_of(command: list[str], repeat: int) -> float:
    """The shortest wall time of ``repeat`` runs of ``command`` (seconds); it must succeed."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=1000, help="CFR+ iterations of the solve comparison")
    args = parser.parse_args()
    csro = [sys.executable, "-m", "csro"]
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(FIXTURE) as archive:
            archive.extractall(tmp, filter="data")
        run = next(pathlib.Path(tmp).rglob("run.db")).parent
        reference = best_of([sys.executable, "-c", "pass"], args.repeat)
        print(f"reference `python -c pass`: {reference * 1000:.0f} ms")
        for name, command in (("csro --help", csro + ["--help"]), ("csro status DIR", csro + ["status", str(run)])):
            seconds = best_of(command, args.repeat)
            print(f"{name:18} {seconds * 1000:6.0f} ms, {(seconds - reference) * 1000:5.0f} ms beyond the reference "
                  f"(target < 300), {seconds / reference:5.1f}x the reference")
    solve = best_of(csro + ["solve", "--game", "leduc_poker", "--algo", "cfr+", "--iterations", str(args.iterations)],
                    args.repeat)
    cpp = best_of([sys.executable, "-c", CPP_CFR, str(args.iterations)], args.repeat)
    print(f"solve leduc cfr+ x{args.iterations}: csro {solve * 1000:.0f} ms, C++ {cpp * 1000:.0f} ms as whole processes; "
          f"C++ / csro = {cpp / solve:.2f}")


if __name__ == "__main__":
    main()
