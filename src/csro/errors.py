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
    └── RunStopped            the run stopped cleanly before an LLM call, resumably (``csro resume``)
        ├── BudgetExhausted   ... the call would pass ``llm.budget`` (exit 3)
        └── ProviderStopped   ... the provider cannot answer it: a transient failure outlasted
                              ``llm.retry_budget_s``, or a refusal no retry fixes (exit 4)

A misbehaving *policy* never raises out of an evaluation: it forfeits the match and the
reason is recorded (see ``csro.policies.Forfeit``). ``ProviderError`` to ``IllegalAction``
are caught where they arise and recorded (an LLM's reply or program that failed), never shown
as a crash; a ``RunStopped`` is recorded as an event by the run and ends the command with its
own exit status; the others are problems of the user's input or of the machine.
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
    """A failed provider call. ``retryable`` marks what passes (429, 5xx, overload, timeouts,
    connection errors, malformed replies); ``status`` is the HTTP status of a hosted API's
    refusal (a non-retryable one stops the run, ``csro.llm.retry``); ``retry_after`` the
    seconds the server asked to wait (``Retry-After``), if it said; ``label`` a few words for
    the live line (``429``, ``timeout``, ``connection error``)."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None, label: str | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.label = label or (f"HTTP {status}" if status is not None else "failed")


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


class RunStopped(CsroError):
    """The run stopped before an LLM call it could not make; everything done so far is stored
    and ``csro resume DIR`` continues it. The run records it as an event
    (``csro.llm.budget.stop_event``) with ``data()``; ``directory`` is the run's, set by
    whoever knows it (the CLI's hint names it)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.directory: object = None

    def data(self) -> dict:
        """The recorded event's data."""
        return {"reason": str(self)}


class BudgetExhausted(RunStopped):
    """The next LLM call would pass a cap of ``llm.budget``; the call was not made. ``field``
    names the cap (``llm.budget.usd``, ``llm.budget.roles.repair.calls``, ...)."""

    def __init__(self, message: str, field: str = "llm.budget"):
        super().__init__(message)
        self.field = field


class ProviderStopped(RunStopped):
    """The provider could not answer a call: a transient failure outlasted
    ``llm.retry_budget_s``, or a refusal no retry fixes (401/403: the key, 404: the model,
    400: the request). The call was not recorded, so a resume makes it again. ``provider``
    names the provider; ``attempts`` and ``waited_s`` are the stopped call's."""

    def __init__(self, message: str, provider: str, attempts: int = 1, waited_s: float = 0.0):
        super().__init__(message)
        self.provider = provider
        self.attempts = attempts
        self.waited_s = waited_s

    def data(self) -> dict:
        return {"reason": str(self), "provider": self.provider, "attempts": self.attempts, "waited_s": self.waited_s}
