"""Estimate vs actual: ``csro run CONFIG --estimate`` against the run itself (docs/cost.md).

Prints the estimate's low / expected / high calls and tokens (prompt + completion), the
run's recorded ones, and expected / actual (acceptance of issue 18: within 0.7-1.3 on a
real embedded run and a files run). Runs CONFIG into DIR first unless DIR already holds a
finished run of it.

Usage: python bench/estimate_accuracy.py CONFIG DIR
"""

from __future__ import annotations

import argparse
import pathlib

from csro import runs
from csro.config import load_config, parse_config
from csro.cost import estimate_run
from csro.llm.estimate import format_estimate
from csro.store import RunStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=pathlib.Path)
    parser.add_argument("directory", type=pathlib.Path)
    args = parser.parse_args()
    config = load_config(args.config)
    estimate = estimate_run(config)
    print(format_estimate(estimate), end="")
    if not (args.directory / "run.db").is_file():
        runs.start(config, args.directory)
    with RunStore.open(args.directory) as store:
        if parse_config(store.config()) != config:
            raise SystemExit(f"{args.directory} holds a run of another configuration")
        if store.final() is None:
            raise SystemExit(f"{args.directory} holds an unfinished run: resume it first")
        replies = [r for _, r in store.llm_calls()]
    actual = sum(r.tokens_in + r.tokens_out for r in replies)
    print(f"actual    {len(replies):>8}{sum(r.tokens_in for r in replies):>12}{sum(r.tokens_out for r in replies):>12}"
          f"{actual:>12}")
    for name, s in estimate.scenarios.items():
        print(f"{name} / actual tokens: {(s['tokens_in'] + s['tokens_out']) / actual:.2f}")


if __name__ == "__main__":
    main()
