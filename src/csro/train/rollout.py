"""Running a team workflow: episodes, stage by stage, batched across the group.

For one problem the trainer runs ``group_size`` episodes of the task's workflow. Stage by
stage, every episode's members are sampled in one batched ``generate`` call; the width of
a stage (its ``K_e``) comes from the task, so a router can change it per episode. The
behaviour log-probs of the sampled tokens are computed right after sampling, by a no-grad
forward of the same policy at the same precision as the update's (``token_logprobs``).

Each (episode, stage) becomes one ``Event``: its members are the stage's outputs, its
pre-action state id names the episode and stage, its group is the problem (the episodes
of one problem are the comparable events of the group-relative advantage) and its reward
is the episode's team reward (the task's ``rewards``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Protocol, Sequence

import torch

from csro.seeding import derive_seed
from csro.train.events import Event, Member, Stage, Workflow
from csro.train.model import Chat, Policy, generate, token_logprobs

LOGPROB_ROWS = 16  # rows per no-grad forward when computing behaviour log-probs


@dataclasses.dataclass
class Episode:
    """One run of the workflow on ``problem``: each role's outputs so far, in member order."""

    problem: Any
    index: int
    outputs: dict[str, list[str]] = dataclasses.field(default_factory=dict)


class TeamTask(Protocol):
    """What a task supplies to the rollout (see ``csro.train.tasks``)."""

    name: str
    workflow: Workflow

    def problem(self, step: int, index: int) -> Any:
        """The problem of ``step`` (seeded; ``index`` numbers problems within a step)."""

    def width(self, stage: Stage, episode: Episode) -> int:
        """How many parallel members ``stage`` samples in ``episode`` (``K_e``)."""

    def prompt(self, stage: Stage, member: int, episode: Episode) -> tuple[Chat, str]:
        """The messages of one member and the text that starts its reply (prefill; may be "")."""

    def max_new_tokens(self, role: str) -> int: ...

    def rewards(self, episodes: Sequence[Episode], seed: int) -> list[float]:
        """The team reward of every finished episode."""


@dataclasses.dataclass
class Rollout:
    """The events of one step's episodes, their rewards and where the time went."""

    events: list[Event]
    episodes: list[Episode]
    rewards: list[float]
    generate_s: float
    logprob_s: float
    reward_s: float


def run_episodes(policy: Policy, task: TeamTask, step: int, problems: int, group_size: int, version: int,
                 seed: int, match_root: int | None = None) -> Rollout:
    """``group_size`` episodes on each of ``problems`` problems; one event per (episode, stage).

    ``seed`` seeds the sampling; ``match_root`` (the run seed keyed with the run's secret,
    ``csro.seeding.match_root``) the reward's matches, which a written program must not be
    able to compute (issue 37); None: the run seed itself, public (a caller without a run store)."""
    episodes = [Episode(task.problem(step, p), p * group_size + g) for p in range(problems) for g in range(group_size)]
    members: dict[tuple[int, int], list[Member]] = {}
    gen_s = lp_s = 0.0
    tok = policy.tokenizer
    for s_index, stage in enumerate(task.workflow.stages):
        jobs = []  # (episode, member index, K, prompt ids, prefill)
        for ep in episodes:
            k = task.width(stage, ep)
            for j in range(k):
                chat, prefill = task.prompt(stage, j, ep)  # prefill: environment tokens, masked
                jobs.append((ep, j, k, tuple(tok.chat(chat) + tok.encode(prefill)), prefill))
        start = time.perf_counter()
        samples = generate(policy, [job[3] for job in jobs], task.max_new_tokens(stage.role),
                           seed=derive_seed(seed, "generate", step, s_index))
        gen_s += time.perf_counter() - start
        start = time.perf_counter()
        behaviour = _behaviour_logprobs(policy, [job[3] for job in jobs], [s.completion_ids for s in samples])
        lp_s += time.perf_counter() - start
        for (ep, j, k, prompt_ids, prefill), sample, lps in zip(jobs, samples, behaviour):
            ep.outputs.setdefault(stage.role, []).append(prefill + sample.text)
            event_id = f"{step}/{ep.index}/{s_index}-{stage.role}"
            members.setdefault((ep.index, s_index), []).append(Member(
                event_id=event_id, state_id=f"{step}/{ep.index}/{s_index}", role=stage.role, member_index=j,
                expected_k=k, policy_version=version, prompt_ids=prompt_ids,
                completion_ids=sample.completion_ids, completion_mask=(1,) * len(sample.completion_ids),
                behaviour_logprobs=tuple(lps), text=sample.text))
    start = time.perf_counter()
    rewards = task.rewards(episodes, seed=derive_seed(seed if match_root is None else match_root, "reward", step))
    reward_s = time.perf_counter() - start
    events = []
    for ep, reward in zip(episodes, rewards):
        group = f"{step}/problem-{ep.index // group_size}"
        for s_index, stage in enumerate(task.workflow.stages):
            rows = tuple(members.get((ep.index, s_index), ()))
            if rows:
                events.append(Event(rows[0].event_id, group, stage.role, rows, reward))
    return Rollout(events, episodes, list(rewards), gen_s, lp_s, reward_s)


def _behaviour_logprobs(policy: Policy, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]]
                        ) -> list[list[float]]:
    out: list[list[float]] = []
    with torch.no_grad():
        for i in range(0, len(prompts), LOGPROB_ROWS):
            chunk_c = completions[i:i + LOGPROB_ROWS]
            lp, _ = token_logprobs(policy, prompts[i:i + LOGPROB_ROWS], chunk_c)
            out.extend(lp[r, :len(c)].tolist() for r, c in enumerate(chunk_c))
    return out
