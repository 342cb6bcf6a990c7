"""Policy worker start-up: a sandboxed worker's start and first call, against a bare interpreter.

Measured side by side in this run, alternating, ``--n`` times each:

- reference: ``python -P -s -c pass`` started and reaped (what any worker process pays);
- csro: ``PolicyWorker(...).start()`` (every kernel layer: namespaces and the fork into the
  pid namespace, the root of its own, Landlock, seccomp) plus one batched call and ``close()``.

Prints the median milliseconds of each and their ratio (csro / reference: the sandbox's cost
in interpreter start-ups). Usage: python bench/worker_startup.py [--n 30] [--layers none]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from csro.policies import Call, PolicyWorker, SandboxLimits

SOURCE = "class P:\n    def act(self):\n        return 'rock'\n"


def bare() -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-P", "-s", "-c", "pass"], check=True)
    return time.perf_counter() - t


def worker(layers: tuple[str, ...] | None) -> float:
    kw = {} if layers is None else {"layers": layers}
    t = time.perf_counter()
    with PolicyWorker(SOURCE, "P", SandboxLimits(memory_mb=512), **kw) as w:
        assert w.start() is None
        assert w.call([Call(0, "__init__"), Call(0, "act")]) == [None, "rock"]
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--layers", choices=("all", "none"), default="all",
                    help="none: no kernel layer (the Python layer and rlimits only), for comparison")
    args = ap.parse_args()
    layers = None if args.layers == "all" else ()
    ref, got = [], []
    for i in range(args.n):
        ref.append(bare())
        got.append(worker(layers))
        print(f"\r{i + 1}/{args.n}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    r, g = statistics.median(ref) * 1e3, statistics.median(got) * 1e3
    print(f"reference (bare interpreter): {r:.1f} ms   csro worker ({args.layers} layers): {g:.1f} ms   "
          f"ratio {g / r:.2f}")


if __name__ == "__main__":
    main()
