"""The report in a real browser (headless Chromium): it renders, its plots are there, and
the hostile policy's source stays inert text."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import matplotlib.image
import pytest

from csro.report import write_report

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.usefixtures("browser")]

CHROMIUM_TIMEOUT_S = 120


def chromium_binary() -> str:
    """The Chromium to drive. Missing: a failure as root (``make install`` installs Debian's
    chromium then, so its absence is a broken install), a skip that says what to install
    otherwise."""
    binary = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if binary is None:
        if os.geteuid() == 0:
            pytest.fail("Chromium is not installed, although `make install` installs Debian's chromium "
                        "as root: see what its apt-get step printed")
        pytest.skip("Chromium is not installed: install Debian's chromium (apt-get install chromium, "
                    "as root) to run the browser tests")
    return binary


@pytest.fixture(scope="session")
def browser() -> str:
    """``chromium_binary()`` once, before any module's fixtures build a report to show."""
    return chromium_binary()


def chromium(tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium as root with a throw-away profile (see ``chromium_binary``)."""
    cmd = [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)
    assert proc.returncode == 0, f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}"
    return proc


def test_dumped_dom(fake_run, tmp_path):
    url = write_report(fake_run).as_uri()
    dom = chromium(tmp_path, "--dump-dom", url).stdout
    for heading in ("Run", "Final metrics", "Plots", "Policies", "LLM cost and time"):
        assert f"<h2>{heading}</h2>" in dom
    svgs = re.findall(r"<svg\b.*?</svg>", dom, re.S)
    assert len(svgs) == 4 and all(len(re.findall(r"<(?:path|rect|circle)\b", svg)) > 20 for svg in svgs)
    # inert: no element was made from the policy's text; the text itself is shown, escaped
    assert "<script" not in dom.lower()
    assert "<img" not in dom.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "&lt;/pre&gt;&lt;img src=x onerror=alert(2)&gt;" in dom
    assert 'id="policy-p2"' in dom


def test_cost_per_role_and_per_iteration_as_rendered(fake_run, tmp_path):
    """The LLM cost tables as the browser lays them out: rows of visible cell texts."""
    dom = chromium(tmp_path, "--dump-dom", write_report(fake_run).as_uri()).stdout
    llm = dom[dom.index('<section id="llm">'):]
    tables = re.findall(r'<table class="cost">(.*?)</table>', llm, re.S)
    assert len(tables) == 2  # per role, per iteration

    def rows(html: str) -> list[list[str]]:
        return [[re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<t[dh]>(.*?)</t[dh]>", row, re.S)]
                for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)]

    by_role, by_iteration = rows(tables[0]), rows(tables[1])
    assert by_role[0][:8] == ["role", "calls", "distinct programs", "tokens in", "cached", "tokens out", "errors",
                              "cost (USD)"]
    assert [r[:8] for r in by_role[1:]] == [["proposal", "2", "1", "12000", "10000", "400", "1", "$0.0150"],
                                            ["repair", "1", "1", "12000", "10000", "400", "0", "$0.0150"],
                                            ["refinement", "1", "1", "12000", "10000", "400", "0", "$0.0150"]]
    assert [r[:8] for r in by_iteration[1:]] == [["1", "1", "1", "12000", "10000", "400", "0", "$0.0150"],
                                                 ["2", "3", "1", "24000", "20000", "800", "1", "$0.0300"]]
    assert all(float(r[8]) > 0 for r in by_role[1:])  # the time column
    text = re.sub(r"<[^>]+>", " ", llm)
    assert re.search(r"cost\s+\$0\.0450", text)


def test_visible_text_and_screenshot(fake_run, tmp_path):
    path = write_report(fake_run)
    # the hostile source is visible as text in the rendered page
    text = chromium(tmp_path, "--dump-dom", f"{path.as_uri()}#policy-p2").stdout
    assert re.sub(r"<[^>]+>", "", text).count("alert(1)") >= 3  # the docstring, the return value, an info field
    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", path.as_uri())
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (2400, 1280)
    assert pixels[..., :3].std() > 0.05  # not a blank page
