"""Console injection: a policy's text (exception messages, printed output, action strings) is
data. Each attempt is a real ``csro eval`` subprocess, with the table and with ``--json``: it
must exit normally, with no raw ESC, C1 control, bidi or other invisible format character in
its stdout or stderr, and Rich markup shown as text, not interpreted (``csro.text.untrusted``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata

import pytest

from tests.conftest import one_per_kind_fast

CSRO = [sys.executable, "-m", "csro"]
MARKUP = "[bold red]PWNED[/bold red] [link=https://evil.example]click[/link]"
UNBALANCED = "[/] [/bold] PWNED"
OSC = "\x1b]0;PWNED-TITLE\x07\x1b]52;c;UFdORUQ=\x07"
CSI = "\x1b[2J\x1b[1;31mPWNED\x1b[0m"
C1 = "\x9b2J\x9d0;PWNED\x9c\x85"
BIDI = "PWNED \u202eevil\u202c \u2066x\u2069 \u200b\ufeff\U000e0041"

# (name, kind, source of the policy). Every policy plays builtin:rockbot in one match of RRPS.
ATTEMPTS = [
    ("markup_in_exception", "markup", f"class Agent:\n    def act(self, o):\n        raise ValueError({MARKUP!r})\n"),
    ("unbalanced_markup_in_exception", "markup",
     f"class Agent:\n    def act(self, o):\n        raise ValueError({UNBALANCED!r})\n"),
    ("markup_in_init_exception", "markup",
     f"class Agent:\n    def __init__(self):\n        raise RuntimeError({UNBALANCED + MARKUP!r})\n"
     "    def act(self, o):\n        return 'ROCK'\n"),
    ("markup_in_module_exception", "markup", f"raise SystemError({MARKUP!r})\nclass Agent:\n    pass\n"),
    ("osc_title_and_clipboard_in_exception", "escapes",
     f"class Agent:\n    def act(self, o):\n        raise ValueError({OSC!r})\n"),
    ("csi_in_exception", "escapes", f"class Agent:\n    def act(self, o):\n        raise ValueError({CSI!r})\n"),
    ("c1_in_exception", "escapes", f"class Agent:\n    def act(self, o):\n        raise ValueError({C1!r})\n"),
    ("bidi_in_exception", "escapes", f"class Agent:\n    def act(self, o):\n        raise ValueError({BIDI!r})\n"),
    ("escapes_and_markup_printed_then_crash", "output",
     "import os, sys\nclass Agent:\n    def act(self, o):\n"
     f"        print({MARKUP + OSC + C1 + BIDI!r})\n        sys.stdout.flush()\n        os._exit(3)\n"),
    ("escapes_written_to_stderr_then_exit", "output",
     "import os, sys\nclass Agent:\n    def act(self, o):\n"
     f"        sys.stderr.write({UNBALANCED + CSI + OSC!r})\n        sys.stderr.flush()\n"
     "        os._exit(4)\n"),
    ("escapes_and_markup_as_exit_code", "escapes",
     f"import sys\nclass Agent:\n    def act(self, o):\n        sys.exit({OSC + UNBALANCED!r})\n"),
    ("markup_as_action", "action", f"class Agent:\n    def act(self, o):\n        return {MARKUP!r}\n"),
    ("escapes_as_action", "action", f"class Agent:\n    def act(self, o):\n        return {OSC + C1 + BIDI!r}\n"),
]


def _shown_raw(text: str) -> list[str]:
    """Characters a terminal would act on or a reader cannot see (newline and tab aside)."""
    return sorted({f"U+{ord(c):04X}" for c in text if c not in "\n\t" and (
        unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") or 0xE0000 <= ord(c) <= 0xE0FFF)})


def _eval(policy: str, *extra: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*CSRO, "eval", "--game", "rrps", "--policy", policy, "--opponents",
                           "builtin:rockbot", "--matches", "1", "--processes", "1", *extra],
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    for stream in (proc.stdout, proc.stderr):
        text = stream.decode("utf-8")  # strict: no stray bytes either
        assert _shown_raw(text) == [], text[-2000:]
    return proc


def test_the_corpus_covers_every_kind_more_than_once():
    kinds = [k for _, k, _ in ATTEMPTS]
    assert {"markup", "escapes", "output", "action"} == set(kinds)
    assert all(kinds.count(k) >= 2 for k in kinds)


@pytest.mark.parametrize("attempt", one_per_kind_fast(ATTEMPTS, lambda a: a[1], lambda a: a[0]))
def test_a_policy_s_text_is_shown_escaped(tmp_path, attempt):
    name, _, source = attempt
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    table = _eval(str(path)).stdout.decode()
    assert f"{name} forfeited vs builtin:rockbot" in table, table
    report = json.loads(_eval(str(path), "--json").stdout)
    (entry,) = report["results"]
    assert sum(entry["forfeits"].values()) == 1
    (example,) = entry["forfeit_examples"]
    detail = example["detail"]
    assert _shown_raw(detail) == [], detail  # escaped in the JSON's strings too
    if "[/" in source:  # markup shown as text: the tags are on the line (the table's is its last)
        assert "PWNED" in detail and "[/" in detail
        assert ("[/bold red]" if MARKUP in source else "[/bold]") in table, table
    if "\\x" in source or "\\u" in source or "\\U" in source:  # a visible escape for each
        assert re.search(r"\\(x1b|x9b|x9d|u202e)", detail), detail


def test_csro_status_shows_recorded_text_escaped(tmp_path):
    """``csro status`` (and ``--json``) of a run whose store holds text with markup and
    escapes (here the reason of a budget stop): shown as text, exit 0."""
    from csro.store import PolicyRecord, RunStore, SigmaRecord

    directory = tmp_path / "run"
    text = f"{UNBALANCED} {OSC} {C1} {BIDI}"
    config = {"game": "rrps", "iterations": 2, "llm": {"provider": "files", "model": "canned", "api_key_env": None}}
    with RunStore.create(directory, config) as store:
        store.add_policy(PolicyRecord("p0", 0, 0, "initial", None, "builtin:random", None, None))
        store.add_sigma(SigmaRecord(0, 0, ("p0",), (1.0,), "nash", 0.0))
        store.mark_iteration(0, {"population_size": 1, "seconds": 1.0})
        store.add_event(1, "iteration_start", {"population": 1})
        store.add_event(1, "budget_exhausted", {"reason": text})
    runs = [subprocess.run([*CSRO, "status", str(directory), *extra], capture_output=True, timeout=300)
            for extra in ([], ["--json"])]
    for run in runs:
        assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
        assert _shown_raw(run.stdout.decode() + run.stderr.decode()) == []
    assert "stopped by the LLM budget: [/] [/bold] PWNED \\x1b]0;PWNED-TITLE\\x07" in runs[0].stdout.decode()
    stopped = json.loads(runs[1].stdout)["stopped"]
    assert stopped.startswith("[/] [/bold] PWNED \\x1b]0;PWNED-TITLE\\x07") and _shown_raw(stopped) == []
