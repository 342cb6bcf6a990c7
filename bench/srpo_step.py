"""Seconds per SRPO update for a team with K = 3 parallel solvers, and where the time goes.

The ``arith`` team (router -> 3 solvers -> verifier -> aggregator; the router is told to
use 3) is rolled out with ``group_size`` episodes, then updated with the SRPO objective,
exactly as a training run (``kind: train``) does (``TrainRun.step``). Per step it reports the seconds spent in
generation, behaviour log-probs, reward and the update, and as the reference measured in the
same run, one plain supervised step (mean token NLL, same rows, same mini-batches, AdamW)
on the same events: ``update / reference`` near 1 means the objective costs no more than a
forward-backward pass of the same tokens. The first step is a warm-up and not counted.

Usage: python bench/srpo_step.py [--model smollm2-135m|tiny] [--steps 3] [--device auto|cpu|cuda]
       [--bf16] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from csro.train.batching import event_minibatches
from csro.train.config import train_config
from csro.train.model import token_logprobs
from csro.train.rollout import run_episodes
from csro.train.tasks.arith import ArithTask
from csro.train.trainer import TrainRun, update


class FixedTeam(ArithTask):
    """``arith`` whose router's choice is overridden: always all ``k`` solvers (a fixed team)."""

    def width(self, stage, episode):
        return self.k if stage.width is None else stage.width


def reference_step(run: TrainRun, events) -> float:
    """Seconds of plain NLL steps over the same event-atomic mini-batches."""
    start = time.perf_counter()
    for minibatch in event_minibatches(events, run.config.minibatch_rows).minibatches:
        rows = [m for e in minibatch for m in e.members]
        lp, mask = token_logprobs(run.policy, [m.prompt_ids for m in rows], [m.completion_ids for m in rows])
        loss = -(lp * mask).sum() / mask.sum()
        run.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        run.optimizer.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    config = train_config(model=args.model, task="arith", k=3, group_size=args.group_size, steps=args.steps + 1,
                          device=args.device, threads=args.threads, bf16=args.bf16)
    with tempfile.TemporaryDirectory() as out:
        run = TrainRun.create(config, out)
        run.task = FixedTeam(k=3, seed=config.seed, tokens=config.tokens)
        rows = []
        for step in range(args.steps + 1):
            t0 = time.perf_counter()
            rollout = run_episodes(run.policy, run.task, step, 1, config.group_size, version=step, seed=config.seed)
            t1 = time.perf_counter()
            update(run.policy, run.optimizer, rollout.events, config, step)
            t2 = time.perf_counter()
            reference = reference_step(run, rollout.events)
            if step > 0:
                rows.append({"total": t2 - t0, "generate": rollout.generate_s, "logprob": rollout.logprob_s,
                             "reward": rollout.reward_s, "update": t2 - t1, "reference": reference,
                             "rows": sum(len(e.members) for e in rollout.events),
                             "tokens": sum(len(m.completion_ids) for e in rollout.events for m in e.members)})
        run.store.close()
    mean = {k: statistics.fmean(r[k] for r in rows) for k in rows[0]}
    device = run.policy.device
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu, {torch.get_num_threads()} thread(s)"
    print(f"model {args.model} on {name}, bf16={args.bf16}; team: router, 3 solvers, verifier, aggregator; "
          f"{config.group_size} episodes/step; {mean['rows']:.0f} rows, {mean['tokens']:.0f} generated tokens per step")
    print(f"seconds per step (rollout + update): {mean['total']:.2f}  (mean of {len(rows)} steps after a warm-up)")
    for part in ("generate", "logprob", "reward", "update"):
        print(f"  {part:9s} {mean[part]:7.2f} s  {mean[part] / mean['total']:6.1%}")
    print(f"update / plain NLL step on the same rows (reference): {mean['update'] / mean['reference']:.2f} "
          f"({mean['update']:.2f} s vs {mean['reference']:.2f} s)")


if __name__ == "__main__":
    main()
