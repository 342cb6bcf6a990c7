"""Plain value types shared by the sandbox, the match runner and the payoff table."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, NamedTuple


class Reason(str, enum.Enum):
    """Why a policy forfeited a match. The string values are what the store and JSON show."""

    COMPILE_ERROR = "compile_error"  # source does not compile or lacks the policy class
    TIMEOUT = "timeout"  # wall-clock limit per call or per match exceeded
    CPU_LIMIT = "cpu_limit"  # the worker's CPU-time rlimit was exceeded
    MEMORY = "memory"  # the memory limit was hit (MemoryError or killed)
    CRASH = "crash"  # the worker process died (signal, sys.exit, os._exit, ...)
    EXCEPTION = "exception"  # a policy method raised
    ILLEGAL_ACTION = "illegal_action"  # a string that is not a legal action
    MALFORMED = "malformed"  # a reply of the wrong type/size, or a broken frame
    FORBIDDEN = "forbidden"  # tried a forbidden operation (files, network, processes, ...)


@dataclasses.dataclass(frozen=True)
class Forfeit:
    """A failed call: the reason and a short, bounded detail (an error excerpt)."""

    reason: Reason
    detail: str = ""

    def __post_init__(self) -> None:
        if len(self.detail) > 2000:
            object.__setattr__(self, "detail", self.detail[:2000] + "…")

    def describe(self) -> str:
        """One short message for a person or an LLM's repair prompt: what went wrong, and
        the useful end of the detail (a traceback's last lines, where the failing line is)."""
        return describe_failure(self.reason.value, self.detail)


_LABELS = {
    "compile_error": "the program failed to load",
    "exception": "a method raised an exception",
    "illegal_action": "an illegal action was returned",
    "timeout": "a call took too long",
    "cpu_limit": "the CPU-time limit was exceeded",
    "memory": "the memory limit was exceeded",
    "crash": "the program crashed the worker",
    "malformed": "a reply had the wrong type",
    "forbidden": "a forbidden operation was attempted",
}
_TAIL_LINES = 6
_TAIL_CHARS = 600


def describe_failure(reason: str, detail: str) -> str:
    """``Forfeit.describe`` for a reason and detail as the store keeps them."""
    lines = [ln for ln in (detail or "").strip().splitlines() if ln.strip()]
    text = "\n".join(lines[-_TAIL_LINES:])
    if len(text) > _TAIL_CHARS:
        text = "…" + text[-_TAIL_CHARS:]
    label = _LABELS.get(reason, reason)
    return f"{label} ({reason}): {text}" if text else f"{label} ({reason})"


@dataclasses.dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed policy worker.

    Attributes:
      memory_mb: address-space rlimit of the worker process.
      cpu_seconds: CPU-time rlimit over the worker's whole life.
      start_seconds: wall-clock limit for starting and compiling the policy.
      call_seconds: wall-clock limit for one batched round trip.
      match_seconds: wall-clock limit summed over one match's round trips (runner-enforced).
      output_bytes: stdout/stderr bytes kept per worker (the rest is discarded).
      max_frame_bytes: the largest reply frame accepted from a worker.
      allow_missing: kernel layers ("namespaces", "landlock", "seccomp") the user allows to
        be missing; any other layer that cannot be applied stops the worker (fail closed).
      isolate_matches: a worker process per match (issue 37 item 3(b)): no instance of a
        policy shares a process with an instance of another match, so none can carry what it
        saw to another match. Off by default: it costs a worker start per match and a round
        trip per match and round instead of one per batch (docs/sandbox.md has the figures).
    """

    memory_mb: int = 1024
    cpu_seconds: int = 120
    start_seconds: float = 20.0
    call_seconds: float = 5.0
    match_seconds: float = 60.0
    output_bytes: int = 64_000
    max_frame_bytes: int = 4_000_000
    allow_missing: tuple[str, ...] = ()
    isolate_matches: bool = False


class Call(NamedTuple):
    """One method call on one policy instance inside a worker.

    ``instance`` is the runner's id for one seat of one match (the worker keeps one
    policy object per id, created by ``method="__init__"`` and dropped by
    ``method="__del__"``). ``args`` are plain data. (A NamedTuple: the runner builds one
    per call on the hot path, and a frozen dataclass is several times slower to create.)
    """

    instance: int
    method: str
    args: tuple = ()


Result = Any  # a plain-data reply, or a Forfeit
