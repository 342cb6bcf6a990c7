"""Fixtures of the run tests."""

from __future__ import annotations

import pathlib

import pytest

from run_helpers import POLICIES


@pytest.fixture
def replies(tmp_path) -> pathlib.Path:
    folder = tmp_path / "replies"
    folder.mkdir()
    for name, source in POLICIES.items():
        (folder / name).write_text(source)
    return folder
