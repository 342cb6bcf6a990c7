"""The AOR report in a real browser (headless Chromium): it renders, its key frames load under
the page's Content-Security-Policy, and the diffs and sources are there."""

from __future__ import annotations

import re

import matplotlib.image
import numpy as np
import pytest

from aor_helpers import csro, files_config
from report.test_browser import browser, chromium  # noqa: F401 (browser: a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.usefixtures("browser")]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("aor-report")
    directory = tmp / "run"
    csro("run", files_config(tmp, rounds=1), "--out", directory)
    return directory / "report.html"


def test_dumped_dom_has_frames_diffs_and_sources(report, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", report.as_uri()).stdout
    for heading in ("Run", "Success over rounds", "Controllers"):
        assert f"<h2>{heading}</h2>" in dom
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,', dom)
    assert len(images) == 10 and "c1.1 episode 0 step" in images[-1]
    assert dom.count('<span class="add">') >= 2 and dom.count('<span class="del">') >= 2
    assert 'id="controller-c1.1"' in dom and "FAILURE MODE:" in dom
    assert len(re.findall(r"<svg\b", dom)) == 1 and "<script" not in dom.lower()


def test_the_frames_are_drawn(report, tmp_path):
    """A screenshot of the report differs from one of the same page with its images removed:
    the browser loaded and drew the data-URI frames (a CSP that blocked them would not)."""
    bare = report.with_name("bare.html")
    bare.write_text(re.sub(r'src="data:image/png;base64,[^"]+"', 'src=""', report.read_text()))
    shots = []
    for page in (report, bare):
        shot = tmp_path / f"{page.stem}.png"
        chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri())
        shots.append(matplotlib.image.imread(shot)[..., :3])
    assert shots[0].shape == (2400, 1280, 3) and shots[0].std() > 0.05
    changed = np.abs(shots[0] - shots[1]).max(axis=2) > 0.1
    assert changed.sum() > 5 * 64 * 48  # at least five frames' worth of pixels
