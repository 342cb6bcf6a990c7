"""``csro.text.untrusted``: a program's text made safe to show, and the doors that use it."""

from __future__ import annotations

import io
import unicodedata

import pytest
from rich.console import Console

from csro import events
from csro.cli import _progress, loop
from csro.text import untrusted


@pytest.mark.parametrize("raw,shown", [
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),  # OSC 0: the window title
    ("\x1b]52;c;cHduZWQ=\x1b\\", "\\x1b]52;c;cHduZWQ=\\x1b\\"),  # OSC 52: the clipboard
    ("\x1b[2J\x1b[31m", "\\x1b[2J\\x1b[31m"),  # CSI
    ("\x9b31m\x9d0;t\x9c\x85", "\\x9b31m\\x9d0;t\\x9c\\x85"),  # C1 CSI, OSC, ST, NEL
    ("a\rb\x08c\x7f\x00", "a\\x0db\\x08c\\x7f\\x00"),
    ("\u202eevil\u202c \u2066x\u2069 \u200f", "\\u202eevil\\u202c \\u2066x\\u2069 \\u200f"),  # bidi
    ("z\u200bw\u200dj\ufeff\u00ad", "z\\u200bw\\u200dj\\ufeff\\xad"),  # zero width, BOM, soft hyphen
    ("\U000e0041\U000e007f", "\\U000e0041\\U000e007f"),  # tag characters
    ("\u2028\u2029", "\\u2028\\u2029"),  # line and paragraph separators
    ("\u3164\uffa0\u115f\ufe0f", "\\u3164\\uffa0\\u115f\\ufe0f"),  # blank fillers, a variation selector
    ("\ud800", "\\ud800"),  # a lone surrogate
])
def test_controls_and_invisible_characters_are_shown_as_escapes(raw, shown):
    assert untrusted(raw) == shown


def test_visible_text_newlines_and_tabs_are_kept():
    text = "Traceback (most recent call last):\n\tValueError: é ü 你好 … ± × — ✓ [bold]x[/]"
    assert untrusted(text) == text


def test_no_character_a_terminal_acts_on_is_left():
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    left = {c for c in untrusted(every) if c not in "\n\t" and unicodedata.category(c) in
            ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")}
    assert left == set()


def test_markup_is_escaped_for_rich_and_rendered_as_text():
    text = "[bold red]x[/bold red] [/] [link=https://evil.example]y[/link] \\"
    out = io.StringIO()
    Console(file=out, width=200, emoji=False).print(
        "[yellow]p[/yellow] " + untrusted(text, markup=True) + "[dim]![/dim]")
    assert out.getvalue() == "p " + text + "!\n"


def test_data_is_escaped_through_and_through():
    data = {"k\x1b": ["\x9b", ("\u202e", 3)], "n": 1.5, "none": None, "ok": True}
    assert untrusted(data) == {"k\\x1b": ["\\x9b", ("\\u202e", 3)], "n": 1.5, "none": None, "ok": True}
    assert untrusted({"a": "[/]"}, markup=True) == {"a": "\\[/]"}


def test_an_event_line_shows_a_program_s_text_as_text(capsys):
    """The progress door (``run_hooks``): an oracle candidate's error with markup and escapes
    is printed as text; unescaped, the "[/]" would make Rich raise MarkupError."""
    error = "Traceback (most recent call last):\nValueError: [/] \x1b]0;T\x07 :skull: \u202ex"
    with _progress.run_hooks(loop.VIEW, 3) as hooks:
        hooks.on_event(1, events.ORACLE_CANDIDATE, {"key": "1/propose/0", "valid": False, "error": error})
    err = capsys.readouterr().err
    assert "invalid: ValueError: [/] \\x1b]0;T\\x07 :skull: \\u202ex" in err
    assert "\x1b" not in err and "\u202e" not in err
