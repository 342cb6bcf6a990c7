"""The one exception hierarchy of csro.

    CsroError                 base; the CLI prints its message on one line and exits 2
    ├── ConfigError           a bad configuration value, flag or option
    ├── GameError             an unknown game string, game name or built-in policy
    ├── PolicyError           a policy file that is missing or cannot be read
    ├── SandboxError          the sandbox itself cannot run (not a policy's fault)
    └── BudgetExhausted       the next LLM call would pass ``llm.budget`` (the run stops cleanly)

A misbehaving *policy* never raises out of an evaluation: it forfeits the match and the
reason is recorded (see ``csro.policies.Forfeit``). These exceptions are for problems of
the user's input or of the machine.
"""


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


class BudgetExhausted(CsroError):
    """The next LLM call would pass a cap of ``llm.budget``; the call was not made. ``field``
    names the cap (``llm.budget.usd``, ``llm.budget.roles.repair.calls``, ...); ``directory``
    is the run's, set by whoever knows it (the CLI's hint names it)."""

    def __init__(self, message: str, field: str = "llm.budget"):
        super().__init__(message)
        self.field = field
        self.directory: object = None
