"""The training run store: ``DIR/train.db`` (SQLite, WAL) plus ``DIR/checkpoints/``.

The conventions and plumbing every csro store shares (``csro._sqlite``): every write is its
own committed transaction, ``synchronous=NORMAL``, a resumed run continues from what is stored. Tables:

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

import json
import os
import pathlib
import time
from typing import Sequence

from csro._sqlite import DRAW, SQLiteStore, dumps, keep_secret
from csro.errors import TrainStoreError

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


class TrainStore(SQLiteStore):
    """The store of one training run directory. Use ``create`` or ``open``."""

    kind = "training run"
    db_name = DB_NAME
    schema_version = SCHEMA_VERSION

    @classmethod
    def exists(cls, directory: str | pathlib.Path) -> bool:
        return (pathlib.Path(directory) / DB_NAME).is_file()

    @classmethod
    def create(cls, directory: str | pathlib.Path, config: dict) -> "TrainStore":
        directory = pathlib.Path(directory)
        if cls.exists(directory):
            raise TrainStoreError(f"a training run already exists at {directory}; "
                                  "continue it with csro resume or choose another --out")
        directory.mkdir(parents=True, exist_ok=True)
        store = cls(directory, cls._connect(directory / DB_NAME))
        with store._write() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            conn.execute("INSERT INTO run (id, config, created) VALUES (1, ?, ?)",
                         (dumps(config, "the configuration"), time.time()))
            keep_secret(conn, DRAW)  # the key of the seeds its rewards' matches are played with
        return store

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
                self._read("SELECT step, data FROM steps ORDER BY step")]

    def events(self, step: int | None = None) -> list[dict]:
        sql = "SELECT step, event_id, role, k, reward, advantage, completions FROM events"
        rows = self._read(sql + (" WHERE step = ?" if step is not None else "") + " ORDER BY step, event_id",
                          (step,) if step is not None else ())
        return [{"step": r[0], "event_id": r[1], "role": r[2], "k": r[3], "reward": r[4], "advantage": r[5],
                 "completions": json.loads(r[6])} for r in rows]

    def last_checkpoint(self) -> tuple[int, pathlib.Path] | None:
        rows = self._read("SELECT step, path FROM checkpoints ORDER BY step DESC LIMIT 1")
        return (rows[0][0], self.directory / rows[0][1]) if rows else None

    def checkpoint_path(self, step: int) -> pathlib.Path:
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        return self.checkpoint_dir / f"step-{step}.pt"


def atomic_save(save, path: pathlib.Path) -> None:
    """Call ``save(tmp_path)`` then rename into ``path`` (a crash leaves no half file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    save(tmp)
    tmp.replace(path)
