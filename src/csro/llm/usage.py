"""A run's LLM spending from its recorded calls: per role, per iteration and in total, with
time, and what a flaky provider cost in waiting. ``csro status --json`` and the report show
it (docs/cost.md)."""

from __future__ import annotations

from typing import Iterable, Sequence

from csro.events import PROVIDER_STOPPED

from csro.extract import reply_program
from csro.llm._types import LLMReply
from csro.config import ROLES
from csro.llm.roles import role_of


def usage(replies: Iterable[LLMReply]) -> dict:
    """``{"total": G, "roles": {role: G}, "iterations": [{"iteration": k, **G}]}`` where each G is
    ``{"calls", "errors", "programs", "tokens_in", "tokens_cached", "tokens_out", "cost_usd", "seconds",
    "retried", "waited_s"}``:
    ``programs`` counts the distinct programs among the replies (``csro.extract.reply_program``;
    issue 26: a sampler that collapses onto one mode shows as fewer programs than calls),
    ``cost_usd`` is None when a call's price is unknown, ``seconds`` the calls' summed latency,
    ``retried`` the calls that took more than one attempt and ``waited_s`` their seconds spent
    waiting between attempts (``csro.llm.retry``)."""
    replies = list(replies)
    program = {id(r): reply_program(r.full_text) if r.ok else None for r in replies}  # each reply parsed once
    roles: dict[str, list[LLMReply]] = {}
    iterations: dict[int, list[LLMReply]] = {}
    for r in replies:
        roles.setdefault(role_of(r.key.step), []).append(r)
        iterations.setdefault(r.key.iteration, []).append(r)
    return {"total": _group(replies, program),
            "roles": {role: _group(roles[role], program) for role in ROLES if role in roles},
            "iterations": [{"iteration": k, **_group(v, program)} for k, v in sorted(iterations.items())]}


def _group(replies: list[LLMReply], program: dict[int, str | None]) -> dict:
    costs = [r.cost_usd for r in replies]
    programs = {program[id(r)] for r in replies} - {None}
    return {"calls": len(replies), "errors": sum(not r.ok for r in replies), "programs": len(programs),
            "tokens_in": sum(r.tokens_in for r in replies), "tokens_cached": sum(r.tokens_cached for r in replies),
            "tokens_out": sum(r.tokens_out for r in replies),
            "cost_usd": None if None in costs else sum(costs), "seconds": sum(r.latency_s for r in replies),
            "retried": sum(r.attempts > 1 for r in replies), "waited_s": sum(r.waited_s for r in replies)}


def waiting(total: dict, recorded_events: Sequence[dict]) -> dict:
    """What a flaky provider cost a run in waiting: ``retried``, the calls that needed more
    than one attempt, the recorded ones (``total``, a group of ``usage``) and those that
    stopped the run (its ``provider_stopped`` events); ``waited_s``, their seconds spent
    waiting between attempts."""
    stops = [e["data"] for e in recorded_events if e["kind"] == PROVIDER_STOPPED]
    return {"retried": total["retried"] + sum(s.get("attempts", 1) > 1 for s in stops),
            "waited_s": total["waited_s"] + sum(s.get("waited_s", 0.0) for s in stops)}
