"""Rich progress for long CLI work: shown on stderr when it is a terminal, silent otherwise."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
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


WAIT_LINE_EVERY_S = 5.0  # when stderr is not a terminal, at most one waiting line this often


def wait_text(provider: str, what: str, seconds: float) -> str:
    """The line of a wait for a flaky provider (``csro.llm.retry``)."""
    return f"waiting for {provider}: {what}, retry in {seconds:.0f} s" if seconds >= 1 else \
        f"waiting for {provider}: {what}, retry in {seconds:.1f} s"


@contextlib.contextmanager
def run_hooks(view: View, total: int | None) -> Iterator[Hooks]:
    """Event lines on stderr; when stderr is a terminal, also a match progress bar, a live
    line for each running LLM completion (its tokens and rate; not a log line) and one while
    the run waits for a flaky provider ("waiting for openai: 429, retry in 4 s"); when it is
    not, that wait as a log line at most every ``WAIT_LINE_EVERY_S``. An event's data reaches
    its line through ``untrusted`` (markup escaped): the line's own markup is the view's, every
    string of the data is text."""
    from csro.runs import Hooks

    if not sys.stderr.isatty():
        def on_event(i: int, kind: str, data: dict) -> None:
            line = view.event_line(i, kind, untrusted(data, markup=True), total)
            if line:
                lines.print(line, highlight=False)

        last_wait = [float("-inf")]

        def on_wait(provider: str, what: str, seconds: float) -> None:
            if time.monotonic() - last_wait[0] >= WAIT_LINE_EVERY_S:
                last_wait[0] = time.monotonic()
                lines.print(wait_text(provider, what, seconds), highlight=False, markup=False)
        yield Hooks(on_event=on_event, on_wait=on_wait)
        return
    with new_progress() as bar:
        tasks: dict[str, int] = {}  # match phase -> its bar
        calls: dict[str, int] = {}  # running LLM call -> its line
        waiting: dict[int, float] = {}  # the live waiting line's task -> when its wait ends
        wait_lock = threading.Lock()  # waits are heard from the LLM client's threads

        def settle_wait() -> None:  # the waiting line goes when its wait is over
            with wait_lock:
                for task, until in list(waiting.items()):
                    if time.monotonic() >= until:
                        bar.remove_task(task)
                        del waiting[task]

        def on_wait(provider: str, what: str, seconds: float) -> None:
            settle_wait()
            text = wait_text(provider, what, seconds)
            until = time.monotonic() + seconds
            with wait_lock:
                if waiting:
                    task = next(iter(waiting))
                    bar.update(task, description=text)
                    waiting[task] = max(waiting[task], until)
                else:
                    waiting[bar.add_task(text, total=None)] = until

        def on_event(i: int, kind: str, data: dict) -> None:
            settle_wait()
            line = view.event_line(i, kind, untrusted(data, markup=True), total)
            if line:
                bar.console.print(line, highlight=False)

        def on_progress(phase: str, done: int, total_matches: int) -> None:
            settle_wait()
            if phase not in tasks:
                tasks[phase] = bar.add_task(f"{phase} matches", total=total_matches)
            bar.update(tasks[phase], completed=done, total=total_matches)
            if done >= total_matches:
                bar.remove_task(tasks.pop(phase))

        def on_generation(key: str, tokens: int, seconds: float, done: bool) -> None:
            settle_wait()
            # one line per running completion, gone when it ends: its tokens and their rate
            if done:
                if key in calls:
                    bar.remove_task(calls.pop(key))
                return
            text = f"LLM {key}: {tokens} tokens, {tokens / seconds:.1f} tok/s" if seconds > 0 else f"LLM {key}"
            if key not in calls:
                calls[key] = bar.add_task(text, total=None)
            bar.update(calls[key], description=text)

        yield Hooks(on_event=on_event, on_progress=on_progress, on_generation=on_generation, on_wait=on_wait)
