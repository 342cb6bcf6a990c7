"""The one exception hierarchy of csro.

    CsroError                 base; the CLI prints its message on one line and exits 2
    ├── ConfigError           a bad configuration value, flag or option
    ├── GameError             an unknown game string, game name or built-in policy
    ├── PolicyError           a policy file that is missing or cannot be read
    ├── SandboxError          the sandbox itself cannot run (not a policy's fault)
    ├── SimError              the robot simulator cannot be set up here
    ├── StoreError            a run store is missing, foreign, or would diverge
    │   └── TrainStoreError   ... a training run's store
    ├── ProviderError         one failed LLM provider call (``retryable`` for 429, 5xx, timeouts)
    ├── ExploitabilityError   a policy could not be turned into a table for exact NashConv
    ├── DiffError             an LLM's SEARCH/REPLACE edit is malformed or does not apply
    ├── ProgramFailure        a sandboxed discovery program failed or answered malformed data
    ├── IllegalAction         a policy answered an action that is not legal (caught by the
                              runner: the policy forfeits the match)
    └── BudgetExhausted       the next LLM call would pass ``llm.budget`` (the run stops cleanly)

A misbehaving *policy* never raises out of an evaluation: it forfeits the match and the
reason is recorded (see ``csro.policies.Forfeit``). The exceptions above the last four are
for problems of the user's input or of the machine; the last four are caught where they
arise and recorded (an LLM's reply or program that failed), never shown as a crash.
"""

from __future__ import annotations

from typing import Any, Sequence


class CsroError(Exception):
    """Base class of every error csro raises on purpose."""


class ConfigError(CsroError):
    """A configuration value, command-line flag or option is invalid."""


class GameError(CsroError):
    """A game string, game name or built-in policy name is unknown or invalid."""


class PolicyError(CsroError):
    """A policy reference (file path or ``builtin:NAME``) cannot be resolved."""


class SandboxError(CsroError):
    """The sandbox cannot start workers on this machine."""


class SimError(CsroError):
    """The simulator cannot be set up here (robosuite/mujoco missing or broken, no GL)."""


class StoreError(CsroError):
    """A store is missing, not a csro store, or asked to store a conflicting record."""


class TrainStoreError(StoreError):
    """The training run directory is missing, foreign, or would diverge."""


class ProviderError(CsroError):
    """A failed provider call. ``retryable`` marks 429, 5xx, timeouts and connection errors."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class ExploitabilityError(CsroError):
    """A policy could not be turned into a table (it failed when queried)."""


class DiffError(CsroError):
    """A reply's edit is malformed or does not apply to the parent."""


class ProgramFailure(CsroError):
    """The program could not be run, raised, timed out, or answered malformed data."""


class IllegalAction(CsroError):
    """Raised by ``Match.answer`` when a reply is not one of the legal action strings."""

    def __init__(self, seat: int, reply: Any, legal: Sequence[str]):
        super().__init__(f"seat {seat} answered {reply!r}; legal: {list(legal)}")
        self.seat = seat
        self.reply = reply
        self.legal = tuple(legal)


class BudgetExhausted(CsroError):
    """The next LLM call would pass a cap of ``llm.budget``; the call was not made. ``field``
    names the cap (``llm.budget.usd``, ``llm.budget.roles.repair.calls``, ...); ``directory``
    is the run's, set by whoever knows it (the CLI's hint names it)."""

    def __init__(self, message: str, field: str = "llm.budget"):
        super().__init__(message)
        self.field = field
        self.directory: object = None
