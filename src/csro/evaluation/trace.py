"""One match with a readable trace of every call and reply (for ``csro play``)."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from csro.evaluation.policy_ref import PolicySpec
from csro.evaluation.payoff_table import MatchResult
from csro.evaluation.runner import Chunk, MatchJob, SeatRef, play_chunk
from csro.games import CodeGame
from csro.policies import SandboxLimits


@dataclasses.dataclass
class Trace:
    lines: list[str]
    result: MatchResult


def play_traced(game: CodeGame, seats: Sequence[PolicySpec], seed: int,
                limits: SandboxLimits = SandboxLimits()) -> Trace:
    """Play one match (policies in seat order) and record each round as text."""
    chunk = Chunk(game.name, (MatchJob(tuple(SeatRef.of(s) for s in seats), seed),), limits, trace=True)
    result = play_chunk(chunk)[0]
    return Trace(list(result.trace), result)
