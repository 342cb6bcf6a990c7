"""The training run store: ``DIR/train.db`` (SQLite, WAL) plus ``DIR/checkpoints/``.

The conventions of csro's run store (``csro.store``): every write is its own committed
transaction, ``synchronous=NORMAL``, a resumed run continues from what is stored. Tables:

- ``run``: the configuration and, once finished, the summary;
- ``steps``: one row per finished step (rewards, loss, ratio and clip statistics, dropped
  events, timings) — the metrics;
- ``events``: every decision event of a finished step (role, K_e, reward, advantage, the
  members' completions) for inspection;
- ``checkpoints``: the step whose trainable weights, optimizer and RNG state are in
  ``checkpoints/step-N.pt``.

A step's rows and its checkpoint row are written in one transaction after the checkpoint
file is in place (written to a temporary name, then renamed), so the last step in the
table always has its checkpoint; only the newest checkpoint file is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sqlite3
import time
from typing import Iterator, Sequence

from csro.errors import CsroError

DB_NAME = "train.db"
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE run (id INTEGER PRIMARY KEY CHECK (id = 1), config TEXT NOT NULL, created REAL NOT NULL, final TEXT);
CREATE TABLE steps (step INTEGER PRIMARY KEY, data TEXT NOT NULL, time REAL NOT NULL);
CREATE TABLE events (
    step INTEGER NOT NULL, event_id TEXT NOT NULL, role TEXT NOT NULL, k INTEGER NOT NULL,
    reward REAL NOT NULL, advantage REAL, completions TEXT NOT NULL, PRIMARY KEY (step, event_id));
CREATE TABLE checkpoints (step INTEGER PRIMARY KEY, path TEXT NOT NULL, time REAL NOT NULL);
"""


class TrainStoreError(CsroError):
    """The training run directory is missing, foreign, or would diverge."""


class TrainStore:
    """The store of one training run directory. Use ``create`` or ``open``."""

    def __init__(self, directory: pathlib.Path, conn: sqlite3.Connection):
        self.directory = directory
        self._conn = conn

    @staticmethod
    def _connect(path: pathlib.Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise TrainStoreError(f"{path} is not a csro training database ({exc})") from None
        return conn

    @classmethod
    def exists(cls, directory: str | pathlib.Path) -> bool:
        return (pathlib.Path(directory) / DB_NAME).is_file()

    @classmethod
    def create(cls, directory: str | pathlib.Path, config: dict) -> "TrainStore":
        directory = pathlib.Path(directory)
        if cls.exists(directory):
            raise TrainStoreError(f"a training run already exists at {directory}; pass --resume or choose another --out")
        directory.mkdir(parents=True, exist_ok=True)
        store = cls(directory, cls._connect(directory / DB_NAME))
        with store._write() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            conn.execute("INSERT INTO run (id, config, created) VALUES (1, ?, ?)", (json.dumps(config), time.time()))
        return store

    @classmethod
    def open(cls, directory: str | pathlib.Path) -> "TrainStore":
        directory = pathlib.Path(directory)
        if not cls.exists(directory):
            raise TrainStoreError(f"no training run at {directory} ({DB_NAME} not found)")
        conn = cls._connect(directory / DB_NAME)
        try:
            row = conn.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise TrainStoreError(f"{directory / DB_NAME} is not a csro training database ({exc})") from None
        if row is None or row[0] != SCHEMA_VERSION:
            conn.close()
            raise TrainStoreError(f"{directory / DB_NAME} has schema version {row and row[0]}; expected {SCHEMA_VERSION}")
        return cls(directory, conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "TrainStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def config(self) -> dict:
        return json.loads(self._conn.execute("SELECT config FROM run").fetchone()[0])

    def set_final(self, data: dict) -> None:
        with self._write() as conn:
            conn.execute("UPDATE run SET final = ? WHERE id = 1", (json.dumps(data),))

    def final(self) -> dict | None:
        row = self._conn.execute("SELECT final FROM run").fetchone()
        return json.loads(row[0]) if row and row[0] else None

    @property
    def checkpoint_dir(self) -> pathlib.Path:
        return self.directory / "checkpoints"

    def record_step(self, step: int, metrics: dict, events: Sequence[dict], checkpoint: pathlib.Path) -> None:
        """A finished step: its metrics, events and checkpoint, in one transaction."""
        now = time.time()
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO steps VALUES (?, ?, ?)", (step, json.dumps(metrics), now))
            conn.execute("DELETE FROM events WHERE step = ?", (step,))
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", [
                (step, e["event_id"], e["role"], e["k"], e["reward"], e.get("advantage"),
                 json.dumps(e["completions"])) for e in events])
            conn.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?)",
                         (step, str(checkpoint.relative_to(self.directory)), now))
        for old in self.checkpoint_dir.glob("step-*.pt"):
            if old != checkpoint:
                old.unlink(missing_ok=True)

    def steps(self) -> list[dict]:
        return [{"step": s, **json.loads(d)} for s, d in
                self._conn.execute("SELECT step, data FROM steps ORDER BY step").fetchall()]

    def events(self, step: int | None = None) -> list[dict]:
        sql = "SELECT step, event_id, role, k, reward, advantage, completions FROM events"
        rows = self._conn.execute(sql + (" WHERE step = ?" if step is not None else "") + " ORDER BY step, event_id",
                                  (step,) if step is not None else ()).fetchall()
        return [{"step": r[0], "event_id": r[1], "role": r[2], "k": r[3], "reward": r[4], "advantage": r[5],
                 "completions": json.loads(r[6])} for r in rows]

    def last_checkpoint(self) -> tuple[int, pathlib.Path] | None:
        row = self._conn.execute("SELECT step, path FROM checkpoints ORDER BY step DESC LIMIT 1").fetchone()
        return (row[0], self.directory / row[1]) if row else None

    def checkpoint_path(self, step: int) -> pathlib.Path:
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        return self.checkpoint_dir / f"step-{step}.pt"


def atomic_save(save, path: pathlib.Path) -> None:
    """Call ``save(tmp_path)`` then rename into ``path`` (a crash leaves no half file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    save(tmp)
    tmp.replace(path)
