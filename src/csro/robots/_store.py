"""The AOR run store: ``DIR/aor.db``, one SQLite database that is the truth of an AOR run.

Written as things happen, each write its own committed transaction (the plumbing and the LLM-call
table every csro store shares, ``csro._sqlite``): every LLM call, every controller (source,
parent, the call that wrote it, its diagnosis, valid or why not), every evaluation episode's
outcome and its key frames (PNG), and each finished round. ``kill -9`` loses at most the
work in flight; ``resume`` serves stored calls and episodes from here (our design: the AOR
paper, Kumar arXiv 2603.04466, does not discuss persistence).

The stored configuration records ``kind: aor``, by which ``csro resume / status / report`` find
the run's kind (``csro.runkinds``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pathlib
import time

from csro._sqlite import LLM_CALLS_TABLE, SQLiteStore, StoreError
from csro._sqlite import dumps as _dumps

DB_NAME = "aor.db"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE run (id INTEGER PRIMARY KEY CHECK (id = 1), config TEXT NOT NULL, created REAL NOT NULL,
                  final TEXT);
""" + LLM_CALLS_TABLE + """
CREATE TABLE controllers (
    id TEXT PRIMARY KEY, round INTEGER NOT NULL, source TEXT, sha256 TEXT, parent TEXT,
    call_keys TEXT NOT NULL, diagnosis TEXT, valid INTEGER NOT NULL, error TEXT);
CREATE TABLE episodes (
    controller TEXT NOT NULL, episode INTEGER NOT NULL, seed INTEGER NOT NULL, outcome TEXT NOT NULL,
    PRIMARY KEY (controller, episode));
CREATE TABLE frames (
    controller TEXT NOT NULL, episode INTEGER NOT NULL, idx INTEGER NOT NULL, step INTEGER NOT NULL,
    label TEXT NOT NULL, png BLOB NOT NULL, PRIMARY KEY (controller, episode, idx));
CREATE TABLE rounds (round INTEGER PRIMARY KEY, data TEXT NOT NULL);
"""


@dataclasses.dataclass(frozen=True)
class ControllerRecord:
    """One controller of a run: ``c0`` (the initial one), ``c1`` ... (one per rewrite).

    ``valid`` is False for a rewrite that failed its compile-and-smoke check (``error`` says
    why); such a controller is never evaluated and the loop rolls back to its parent.
    """

    id: str
    round: int
    source: str | None
    sha256: str | None
    parent: str | None
    call_keys: tuple[str, ...]
    diagnosis: str | None
    valid: bool
    error: str | None


@dataclasses.dataclass(frozen=True)
class Frame:
    """A key frame of an episode: the step it shows, why it was taken, the PNG bytes."""

    step: int
    label: str
    png: bytes


class AorStore(SQLiteStore):
    """The SQLite store of one AOR run directory. Use ``create`` or ``open``."""

    kind = "AOR run"
    db_name = DB_NAME
    schema_version = SCHEMA_VERSION

    @classmethod
    def create(cls, directory: str | pathlib.Path, config: dict) -> "AorStore":
        directory = pathlib.Path(directory)
        path = directory / DB_NAME
        if path.exists() or (directory / "run.db").exists():
            raise StoreError(f"a run already exists at {directory}; resume it or choose another directory")
        text = _dumps(config, "the run configuration")
        directory.mkdir(parents=True, exist_ok=True)
        # Built aside and renamed into place: a run killed while creating leaves no half store.
        partial = directory / (DB_NAME + ".partial")
        partial.unlink(missing_ok=True)
        conn = cls._connect(partial)
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            conn.execute("INSERT INTO run (id, config, created) VALUES (1, ?, ?)", (text, time.time()))
            conn.execute("COMMIT")
        finally:
            conn.close()
        os.replace(partial, path)
        return cls.open(directory)

    # -- controllers ---------------------------------------------------------------------
    def add_controller(self, record: ControllerRecord) -> None:
        """Store a controller; the same id again is a no-op (a resumed round re-walks it)."""
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO controllers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (record.id, record.round, record.source, record.sha256, record.parent,
                          _dumps(list(record.call_keys), "call keys"), record.diagnosis, int(record.valid),
                          record.error))

    def controllers(self) -> list[ControllerRecord]:
        rows = self._read("SELECT * FROM controllers ORDER BY round, id")
        return [ControllerRecord(i, r, s, h, p, tuple(json.loads(k)), d, bool(v), e) for i, r, s, h, p, k, d, v, e in rows]

    # -- episodes and frames ---------------------------------------------------------------
    def add_episode(self, controller: str, episode: int, seed: int, outcome: dict, frames: list[Frame]) -> None:
        """An evaluation episode's outcome and key frames, in one transaction."""
        text = _dumps(outcome, "an episode outcome")
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO episodes VALUES (?, ?, ?, ?)", (controller, episode, seed, text))
            conn.execute("DELETE FROM frames WHERE controller = ? AND episode = ?", (controller, episode))
            conn.executemany("INSERT INTO frames VALUES (?, ?, ?, ?, ?, ?)",
                             [(controller, episode, i, f.step, f.label, f.png) for i, f in enumerate(frames)])

    def episodes(self, controller: str) -> dict[int, dict]:
        rows = self._read("SELECT episode, outcome FROM episodes WHERE controller = ? ORDER BY episode", (controller,))
        return {e: json.loads(o) for e, o in rows}

    def frames(self, controller: str, episode: int) -> list[Frame]:
        rows = self._read("SELECT step, label, png FROM frames WHERE controller = ? AND episode = ? ORDER BY idx",
                          (controller, episode))
        return [Frame(s, lab, bytes(p)) for s, lab, p in rows]

    # -- rounds ----------------------------------------------------------------------------
    def mark_round(self, round_: int, data: dict) -> None:
        """Round ``round_`` is finished (its controller evaluated or rejected, the best updated)."""
        text = _dumps(data, f"the data of round {round_}")
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO rounds VALUES (?, ?)", (round_, text))

    def rounds(self) -> list[dict]:
        return [{"round": r, **json.loads(d)} for r, d in self._read("SELECT * FROM rounds ORDER BY round")]


def sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


