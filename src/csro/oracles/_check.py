"""Compile-and-smoke check of candidate programs, in the sandbox only.

A program is valid when it parses and plays one whole match against the game's
``builtin:random`` without forfeiting: no compile error, exception, illegal action,
timeout, crash or forbidden operation (the match runner's forfeit reasons,
``csro.policies.Reason``). RRPS is symmetric and Leduc permutes seats every hand, so one
match tests every role there; other games get one match per seat.
Invalid programs never enter the population; the error text goes back to the LLM in a
repair prompt, so it is short and names the failing line where the sandbox reported one.

The program only ever runs in sandboxed worker processes through the match runner
(``csro.evaluation.runner.play_chunk``); the main process only parses it with ``ast``.
"""

from __future__ import annotations

import ast
from typing import Sequence

from csro.evaluation.policy_ref import PolicySpec, code_policy, resolve
from csro.evaluation.runner import Chunk, MatchJob, SeatRef, derive_seed, play_chunk
from csro.games import CodeGame
from csro.games.leduc import LeducGame
from csro.games.rrps import RRPSGame
from csro.policies import SandboxLimits

# Tighter than a real evaluation: a smoke match of a sane policy takes well under a second.
CHECK_LIMITS = SandboxLimits(memory_mb=512, cpu_seconds=30, start_seconds=10.0,
                             call_seconds=2.0, match_seconds=10.0)
MAX_ERROR_CHARS = 600


def check_program(game: CodeGame, source: str, seed: int) -> str | None:
    """None when ``source`` is a valid policy for ``game``, else a short error message."""
    return check_programs(game, [source], seed)[0]


def check_programs(game: CodeGame, sources: Sequence[str], seed: int) -> list[str | None]:
    """``check_program`` for several sources at once (one lockstep chunk, one worker each)."""
    errors: list[str | None] = [_syntax_error(s) for s in sources]
    random = resolve("builtin:random", game)
    seats = 1 if isinstance(game, (RRPSGame, LeducGame)) else game.num_players
    jobs, owner = [], []
    for i, source in enumerate(sources):
        if errors[i] is not None:
            continue
        candidate = code_policy(f"candidate-{i}", source, game)
        for seat in range(seats):
            jobs.append(MatchJob(_seating(candidate, random, seat, game.num_players),
                                 derive_seed(seed, "check", i, seat)))
            owner.append((i, seat))
    if jobs:
        results = play_chunk(Chunk(game.name, tuple(jobs), CHECK_LIMITS))
        for (i, seat), result in zip(owner, results):
            if errors[i] is None and result.forfeit is not None and result.forfeit[0] == seat:
                errors[i] = _forfeit_message(result.forfeit[1], result.forfeit[2])
    return errors


def _seating(candidate: PolicySpec, other: PolicySpec, seat: int, n: int) -> tuple[SeatRef, ...]:
    return tuple(SeatRef.of(candidate if s == seat else other) for s in range(n))


def _syntax_error(source: str) -> str | None:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        return f"SyntaxError: {exc.msg} at line {exc.lineno}" + (f": {line}" if line else "")
    except ValueError as exc:
        return f"the program cannot be parsed: {exc}"
    return None


def _forfeit_message(reason: str, detail: str) -> str:
    """The sandbox's reason and the useful end of its detail (a traceback's last lines)."""
    lines = [ln for ln in detail.strip().splitlines() if ln.strip()]
    text = "\n".join(lines[-6:])
    if len(text) > MAX_ERROR_CHARS:
        text = "…" + text[-MAX_ERROR_CHARS:]
    label = {
        "compile_error": "the program failed to load",
        "exception": "a method raised an exception",
        "illegal_action": "an illegal action was returned",
        "timeout": "a call took too long",
        "cpu_limit": "the CPU-time limit was exceeded",
        "memory": "the memory limit was exceeded",
        "crash": "the program crashed the worker",
        "malformed": "a reply had the wrong type",
        "forbidden": "a forbidden operation was attempted",
    }.get(reason, reason)
    return f"{label} ({reason}): {text}" if text else f"{label} ({reason})"
