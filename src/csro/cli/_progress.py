"""Rich progress for long CLI work: shown on stderr when it is a terminal, silent otherwise."""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

stderr = Console(stderr=True)


def new_progress() -> Progress:
    """The CLI's Rich progress display: bars on stderr that vanish when done."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=stderr, transient=True)


@contextlib.contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """Yield an ``update(done, total)`` callback drawing a bar (no-op when not a terminal)."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    with new_progress() as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
