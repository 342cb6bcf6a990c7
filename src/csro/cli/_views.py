"""How the CLI shows a run of each kind (``csro run / resume / status``): one ``View`` per run kind.

The commands of ``csro.cli.run`` dispatch through ``csro.runkinds``; ``VIEWS`` (filled in
``csro.cli.run``, one entry per kind of the registry, a test keeps them equal) says how each
kind's events, closing summary and status are printed.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Callable


@dataclasses.dataclass(frozen=True)
class View:
    """The terminal presentation of one run kind.

    Attributes:
      event_line: ``(step, event kind, data, total)`` -> one line or None (not shown); ``step``
        is the iteration, round or training step, ``total`` the configured number of them.
      closing: ``(directory, report path, status)``: printed on stdout after run and resume.
      status: ``(directory, status)``: ``csro status`` without ``--json``.
      total: the configured number of steps from a ``status`` object.

    Every string in the ``data`` and ``status`` a view is given has been through
    ``csro.text.untrusted(..., markup=True)`` (``run_hooks``, ``csro.cli.run``): a view puts it
    into its Rich markup as it is, and prints with a console made with ``emoji=False``.
    """

    event_line: Callable[[int, str, dict, int | None], str | None]
    closing: Callable[[pathlib.Path, pathlib.Path, dict], None]
    status: Callable[[pathlib.Path, dict], None]
    total: Callable[[dict], int | None]
