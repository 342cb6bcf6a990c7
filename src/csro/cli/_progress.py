"""Rich progress for long CLI work: shown on stderr when it is a terminal, silent otherwise."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from csro.cli._views import View
from csro.text import untrusted

if TYPE_CHECKING:
    from csro.runs import Hooks

# emoji=False: ":name:" in a program's text stays text (csro.text)
stderr = Console(stderr=True, emoji=False)
lines = Console(stderr=True, width=None if sys.stderr.isatty() else 160, emoji=False)  # unwrapped when piped


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


@contextlib.contextmanager
def run_hooks(view: View, total: int | None) -> Iterator[Hooks]:
    """Event lines on stderr; when stderr is a terminal, also a match progress bar and a live
    line for each running LLM completion (its tokens and rate; not a log line). An event's
    data reaches its line through ``untrusted`` (markup escaped): the line's own markup is
    the view's, every string of the data is text."""
    from csro.runs import Hooks

    if not sys.stderr.isatty():
        def on_event(i: int, kind: str, data: dict) -> None:
            line = view.event_line(i, kind, untrusted(data, markup=True), total)
            if line:
                lines.print(line, highlight=False)
        yield Hooks(on_event=on_event)
        return
    with new_progress() as bar:
        tasks: dict[str, int] = {}  # match phase -> its bar
        calls: dict[str, int] = {}  # running LLM call -> its line

        def on_event(i: int, kind: str, data: dict) -> None:
            line = view.event_line(i, kind, untrusted(data, markup=True), total)
            if line:
                bar.console.print(line, highlight=False)

        def on_progress(phase: str, done: int, total_matches: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(f"{phase} matches", total=total_matches)
            bar.update(tasks[phase], completed=done, total=total_matches)
            if done >= total_matches:
                bar.remove_task(tasks.pop(phase))

        def on_generation(key: str, tokens: int, seconds: float, done: bool) -> None:
            # one line per running completion, gone when it ends: its tokens and their rate
            if done:
                if key in calls:
                    bar.remove_task(calls.pop(key))
                return
            text = f"LLM {key}: {tokens} tokens, {tokens / seconds:.1f} tok/s" if seconds > 0 else f"LLM {key}"
            if key not in calls:
                calls[key] = bar.add_task(text, total=None)
            bar.update(calls[key], description=text)

        yield Hooks(on_event=on_event, on_progress=on_progress, on_generation=on_generation)
