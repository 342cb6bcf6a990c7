"""The ``csro`` command. Subcommands are thin: logic lives in the library modules.

Each command module registers itself on the shared ``app`` when imported.
"""

import logging
import sys

# On a machine where matplotlib never ran (an empty $HOME), importing the report's plots
# builds its font cache and says so on stderr: the first command's one-line error would have
# a line before it (issue 39, a test file run alone under scripts/fresh-home).
logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)

from csro.cli._app import app, state  # noqa: E402
from csro.errors import BudgetExhausted, CsroError, ProviderStopped
from csro.text import untrusted

# Command modules: importing them registers their commands on ``app``.
from csro.cli import evaluate as _evaluate  # noqa: F401,E402
from csro.cli import solve as _solve  # noqa: F401,E402
from csro.cli import psro_exact as _psro_exact  # noqa: F401,E402
from csro.cli import run as _run  # noqa: F401,E402
from csro.cli import discover as _discover  # noqa: F401,E402
from csro.cli import aor as _aor  # noqa: F401,E402
from csro.cli import train as _train  # noqa: F401,E402
from csro.cli import reproduce as _reproduce  # noqa: F401,E402
from csro.cli import sandbox as _sandbox  # noqa: F401,E402


EXIT_BUDGET = 3  # the run stopped at llm.budget
EXIT_PROVIDER = 4  # the run stopped because its LLM provider could not answer (csro.llm.retry)


def main() -> None:
    """Entry point. Usage errors exit 2 (click); a CsroError is one line on stderr, exit 2; a run
    stopped by its LLM budget (``BudgetExhausted``) says why and how to continue, exit 3; one
    stopped by its provider (``ProviderStopped``) says so on one line, exit 4."""
    try:
        app()
    except ProviderStopped as exc:
        if state["debug"]:
            raise
        print(f"stopped: {exc}; everything done so far is kept, continue with: csro resume {exc.directory or 'DIR'}",
              file=sys.stderr)
        sys.exit(EXIT_PROVIDER)
    except BudgetExhausted as exc:
        if state["debug"]:
            raise
        print(f"stopped: {untrusted(str(exc))}", file=sys.stderr)
        print(f"raise the budget and continue: csro resume {exc.directory or 'DIR'} --set {exc.field}=...",
              file=sys.stderr)
        sys.exit(EXIT_BUDGET)
    except CsroError as exc:
        if state["debug"]:
            raise
        print(f"error: {untrusted(str(exc))}", file=sys.stderr)  # may quote a policy
        sys.exit(2)
