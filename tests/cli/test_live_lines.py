"""The CLI's live lines on a terminal: a running LLM completion shows its tokens and rate,
and its line goes when it ends (csro.cli._progress)."""

from __future__ import annotations

import io
import sys

from rich.console import Console

from csro.cli import _progress
from csro.cli.loop import VIEW


def test_a_running_completion_is_one_live_line_that_goes_when_it_ends(monkeypatch):
    screen = io.StringIO()
    monkeypatch.setattr(_progress, "stderr", Console(file=screen, force_terminal=True, width=100))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with _progress.run_hooks(VIEW, 3) as hooks:
        hooks.on_generation("1/evolve-0-0/2", 42, 2.0, False)
        hooks.on_generation("1/evolve-0-0/2", 87, 3.0, True)
        hooks.on_generation("1/evolve-0-0/3", 5, 0.5, False)
    shown = screen.getvalue()
    assert "LLM 1/evolve-0-0/3: 5 tokens, 10.0 tok/s" in shown  # still running at the last refresh
    assert "87 tokens" not in shown  # an ended completion is not drawn again


def test_piped_output_gets_no_live_line(monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    with _progress.run_hooks(VIEW, 3) as hooks:
        assert hooks.on_generation is None
    assert capsys.readouterr().err == ""
