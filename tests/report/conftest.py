"""Fixtures of the report tests."""

from __future__ import annotations

import pytest

from csro.store import RunStore

from ._fake_run import CONFIG, populate


@pytest.fixture
def fake_run(tmp_path):
    """The directory of a populated, closed run store (see ``_fake_run``)."""
    directory = tmp_path / "run"
    with RunStore.create(directory, CONFIG) as store:
        populate(store)
    return directory
