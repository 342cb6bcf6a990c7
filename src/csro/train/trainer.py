"""The SRPO trainer: rollout, advantages, event-atomic mini-batches, clipped updates, checkpoints.

One training step ``t`` (Yang et al., arXiv 2609.08452, with the spec's choices):

1. run ``group_size`` episodes of the task's workflow on each of ``problems_per_step``
   seeded problems with the current policy (version ``t``); every (episode, stage) is a
   decision event with its behaviour log-probs (``rollout.run_episodes``);
2. drop incomplete events (counted) and compute advantages over the complete ones: one per
   event, group-relative over the episodes of one problem (``srpo``, ``grpo``), or per
   response over the responses of one role in the group (``drmas``);
3. for ``epochs`` passes, shuffle the events (seeded) and pack them into event-atomic
   mini-batches (``batching``); per mini-batch compute the new log-probs, the objective
   (``objective``), and take one AdamW step on the trainable weights (LoRA by default);
4. record the step's metrics, events and a checkpoint in the run store (``store``).

Every random choice is seeded from ``(seed, step)``, so a run resumed from the checkpoint
of step ``t`` continues as the uninterrupted run would (on the same machine and threads).
"""

from __future__ import annotations

import dataclasses
import pathlib
import random
import time
from typing import Callable, Sequence

import torch

from csro.seeding import derive_seed, match_root
from csro.train.batching import event_minibatches, is_complete
from csro.train.config import TrainConfig, train_config
from csro.train.events import Event, Workflow
from csro.train.model import Policy, load_policy, token_logprobs
from csro.train.objective import grpo_objective, group_advantages, srpo_objective
from csro.train.rollout import TeamTask, run_episodes
from csro.train.store import TrainStore, atomic_save
from csro.train.tasks import make_task

StepFn = Callable[[dict], None]


def advantages(events: Sequence[Event], algo: str) -> dict[tuple[str, int], float]:
    """The advantage of every row ``(event id, member index)``.

    ``srpo``/``grpo``: one per event over the events of its group and stage, shared by its
    members. ``drmas``: per response over the responses of one role in the group.
    """
    if algo == "drmas":
        rows = [(e, m) for e in events for m in e.members]
        adv = group_advantages([e.reward for e, _ in rows], [(e.group, m.role) for e, m in rows])
        return {(e.event_id, m.member_index): a for (e, m), a in zip(rows, adv)}
    adv = group_advantages([e.reward for e in events], [(e.group, e.stage) for e in events])
    return {(e.event_id, m.member_index): a for e, a in zip(events, adv) for m in e.members}


def objective(policy: Policy, events: Sequence[Event], adv: dict[tuple[str, int], float], config: TrainConfig
              ) -> tuple[torch.Tensor, dict]:
    """``J`` of one mini-batch of complete events under the configured algorithm (with grad)."""
    rows = [m for e in events for m in e.members]
    new_lp, pad_mask = token_logprobs(policy, [m.prompt_ids for m in rows], [m.completion_ids for m in rows])
    old_lp = torch.zeros_like(new_lp)
    mask = torch.zeros_like(pad_mask)
    for r, m in enumerate(rows):
        n = len(m.completion_ids)
        old_lp[r, :n] = torch.tensor(m.behaviour_logprobs, dtype=old_lp.dtype)
        mask[r, :n] = torch.tensor(m.completion_mask, dtype=mask.dtype)
    mask = mask * pad_mask
    device = new_lp.device
    if config.algo == "srpo":
        event_index = torch.tensor([i for i, e in enumerate(events) for _ in e.members], device=device)
        event_k = torch.tensor([float(e.k) for e in events], device=device)
        event_adv = torch.tensor([adv[(e.event_id, 0)] for e in events], device=device)
        return srpo_objective(new_lp, old_lp, mask, event_index, event_k, event_adv, config.norm, config.clip_eps)
    row_adv = torch.tensor([adv[(m.event_id, m.member_index)] for m in rows], device=device)
    return grpo_objective(new_lp, old_lp, mask, row_adv, config.clip_eps)


def update(policy: Policy, optimizer: torch.optim.Optimizer, events: Sequence[Event], config: TrainConfig,
           step: int) -> dict:
    """Step 2-3 of the module docstring; the update's statistics."""
    kept = [e for e in events if is_complete(e)]  # incomplete events are dropped, and counted
    adv = advantages(kept, config.algo)
    stats = {"loss": [], "ratio_mean": [], "clip_frac": [], "grad_norm": [], "minibatches": 0}
    for epoch in range(config.epochs):
        order = list(kept)
        random.Random(derive_seed(config.seed, "shuffle", step, epoch)).shuffle(order)
        for minibatch in event_minibatches(order, config.minibatch_rows).minibatches:
            j, info = objective(policy, minibatch, adv, config)
            loss = -j
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), config.grad_clip)
            optimizer.step()
            stats["loss"].append(float(loss.detach()))
            stats["ratio_mean"].append(info["ratio_mean"])
            stats["clip_frac"].append(info["clip_frac"])
            stats["grad_norm"].append(float(norm))
            stats["minibatches"] += 1
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    return {"loss": mean(stats["loss"]), "ratio_mean": mean(stats["ratio_mean"]),
            "clip_frac": mean(stats["clip_frac"]), "grad_norm": mean(stats["grad_norm"]),
            "minibatches": stats["minibatches"],
            "dropped_events": len(events) - len(kept), "events": len(kept), "rows": sum(len(e.members) for e in kept),
            "advantages": adv}


@dataclasses.dataclass
class TrainRun:
    """A training run bound to its directory; ``run()`` trains until ``config.steps``."""

    config: TrainConfig
    store: TrainStore
    policy: Policy
    task: TeamTask
    optimizer: torch.optim.Optimizer
    start_step: int = 0

    @classmethod
    def create(cls, config: TrainConfig, out: str | pathlib.Path, policy: Policy | None = None) -> "TrainRun":
        store = TrainStore.create(out, config.model_dump())
        return cls._build(config, store, policy)

    @classmethod
    def resume(cls, out: str | pathlib.Path, steps: int | None = None, policy: Policy | None = None) -> "TrainRun":
        """The run in ``out``, from its last checkpoint; ``steps`` may extend its budget."""
        store = TrainStore.open(out)
        config = train_config(**store.config())
        if steps is not None and steps != config.steps:
            config = config.model_copy(update={"steps": steps})
        run = cls._build(config, store, policy)
        last = store.last_checkpoint()
        if last is not None:
            step, path = last
            state = torch.load(path, map_location=run.policy.device, weights_only=False)
            run.policy.load_trainable_state(state["weights"])
            run.optimizer.load_state_dict(state["optimizer"])
            run.start_step = step + 1
        return run

    @classmethod
    def _build(cls, config: TrainConfig, store: TrainStore, policy: Policy | None) -> "TrainRun":
        torch.set_num_threads(config.threads)
        if policy is None:
            policy = load_policy(config.model, seed=config.seed, lora_rank=config.lora_rank, device=config.device,
                                 temperature=config.temperature, bf16=config.bf16)
        task = make_task(config.task, k=config.k, seed=config.seed, tokens=config.tokens)
        optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=config.lr, weight_decay=0.0)
        return cls(config, store, policy, task, optimizer)

    def run(self, on_step: StepFn | None = None) -> dict:
        cfg = self.config
        for step in range(self.start_step, cfg.steps):
            metrics = self.step(step)
            if on_step is not None:
                on_step(metrics)
        steps = self.store.steps()
        summary = summarise(steps)
        self.store.set_final(summary)
        return summary

    def step(self, step: int) -> dict:
        cfg = self.config
        start = time.perf_counter()
        rollout = run_episodes(self.policy, self.task, step, cfg.problems_per_step, cfg.group_size,
                               version=step, seed=cfg.seed, match_root=match_root(cfg.seed, self.store.secret()))
        t_update = time.perf_counter()
        info = update(self.policy, self.optimizer, rollout.events, cfg, step)
        update_s = time.perf_counter() - t_update
        adv = info.pop("advantages")
        path = self.store.checkpoint_path(step)
        state = {"weights": self.policy.trainable_state(), "optimizer": self.optimizer.state_dict(), "step": step}
        atomic_save(lambda p: torch.save(state, p), path)
        rewards = rollout.rewards
        metrics = {
            "step": step, "reward_mean": sum(rewards) / len(rewards), "rewards": rewards,
            "pass_at_group": _pass_at_group(rewards, cfg.group_size),
            "k_mean": _k_mean(rollout.events, self.task.workflow), **info,
            "generate_s": rollout.generate_s, "logprob_s": rollout.logprob_s, "reward_s": rollout.reward_s,
            "update_s": update_s, "step_s": time.perf_counter() - start,
            "generated_tokens": sum(len(m.completion_ids) for e in rollout.events for m in e.members),
        }
        events = [{"event_id": e.event_id, "role": e.stage, "k": e.k, "reward": e.reward,
                   "advantage": adv.get((e.event_id, 0)), "completions": [m.text for m in e.members]}
                  for e in rollout.events]
        self.store.record_step(step, metrics, events, path)
        return metrics


def _pass_at_group(rewards: Sequence[float], group: int) -> float:
    """Share of problems where some episode of the group earned the best reward (1 for arith)."""
    groups = [rewards[i:i + group] for i in range(0, len(rewards), group)]
    return sum(1.0 for g in groups if max(g) >= 1.0) / len(groups)


def _k_mean(events: Sequence[Event], workflow: Workflow) -> float:
    """Mean K_e of the events of the task-sized stages (solvers, proposers)."""
    roles = {s.role for s in workflow.stages if s.width is None}
    wide = [e.k for e in events if e.stage in roles]
    return sum(wide) / len(wide) if wide else 1.0


def summarise(steps: Sequence[dict]) -> dict:
    """Reward over steps and the run's totals."""
    if not steps:
        return {"steps": 0}
    rewards = [s["reward_mean"] for s in steps]
    half = rewards[len(rewards) // 2:]
    return {"steps": len(steps), "reward_over_steps": rewards, "reward_first": rewards[0],
            "reward_last": rewards[-1], "reward_mean": sum(rewards) / len(rewards),
            "reward_mean_last_half": sum(half) / len(half),
            "pass_at_group_mean": sum(s["pass_at_group"] for s in steps) / len(steps),
            "dropped_events": sum(s["dropped_events"] for s in steps),
            "loss_mean": sum(s["loss"] for s in steps) / len(steps),
            "grad_norm_over_steps": [s.get("grad_norm", 0.0) for s in steps],
            "grad_norm_mean": sum(s.get("grad_norm", 0.0) for s in steps) / len(steps),
            "seconds_per_step": sum(s["step_s"] for s in steps) / len(steps),
            "generate_share": sum(s["generate_s"] for s in steps) / max(sum(s["step_s"] for s in steps), 1e-9),
            "update_share": sum(s["update_s"] for s in steps) / max(sum(s["step_s"] for s in steps), 1e-9)}
