"""One match with a readable trace of every call and reply (for ``csro play``)."""

from __future__ import annotations

import dataclasses
import json
from typing import Sequence

from csro.evaluation.policy_ref import PolicySpec
from csro.evaluation.runner import Chunk, MatchJob, MatchResult, SeatRef, play_chunk
from csro.games import CodeGame
from csro.policies import SandboxLimits


@dataclasses.dataclass
class Trace:
    lines: list[str]
    result: MatchResult


def _short(value: object, width: int = 160) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 1] + "…"


def play_traced(game: CodeGame, seats: Sequence[PolicySpec], seed: int,
                limits: SandboxLimits = SandboxLimits()) -> Trace:
    """Play one match (policies in seat order) and record each round as text."""
    lines: list[str] = []
    rounds = [0]

    def observe(_m: int, requests: Sequence, replies: Sequence) -> None:
        rounds[0] += 1
        parts = []
        for req, reply in zip(requests, replies):
            who = seats[req.seat].name
            if req.wants_action:
                arg = _short(req.args[0]) if req.args else ""
                parts.append(f"{who} ({req.seat}) {req.method} -> {reply!r}" + (f"   obs={arg}" if arg else ""))
            else:
                parts.append(f"{who} ({req.seat}) {req.method}({_short(list(req.args))})")
        lines.append(f"[{rounds[0]:4d}] " + " | ".join(parts))

    chunk = Chunk(game.name, (MatchJob(tuple(SeatRef.of(s) for s in seats), seed),), limits)
    result = play_chunk(chunk, observer=observe)[0]
    return Trace(lines, result)
