"""The training tasks: ``arith`` (router, solvers, verifier, aggregator) and ``rrps-team``."""

from __future__ import annotations

from csro.errors import ConfigError
from csro.train.rollout import TeamTask

TASKS = ("arith", "rrps-team")


def make_task(name: str, *, k: int, seed: int, tokens: dict[str, int] | None = None) -> TeamTask:
    """The task called ``name`` with ``k`` parallel workers."""
    if name == "arith":
        from csro.train.tasks.arith import ArithTask

        return ArithTask(k=k, seed=seed, tokens=tokens)
    if name == "rrps-team":
        from csro.train.tasks.rrps_team import RRPSTeamTask

        return RRPSTeamTask(k=k, seed=seed, tokens=tokens)
    raise ConfigError(f"task: unknown task {name!r}; known: {', '.join(TASKS)}")
