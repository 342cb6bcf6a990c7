"""What every csro store shares: one SQLite file, its transactions, the run row, the LLM calls.

The run store (``csro.store.RunStore``, ``DIR/run.db``) and the AOR store
(``csro.robots._store.AorStore``, ``DIR/aor.db``) keep different records but the same
conventions: a write-ahead log with ``synchronous=NORMAL`` (a committed transaction survives
the death of the writer), one connection shared by several threads behind a lock, each write
its own committed transaction, a ``run`` row with the configuration and the final result, and
every LLM call in one ``llm_calls`` table with one codec (so the report and the ``replay``
provider read both alike), with its tokens (cached ones apart) and its cost. Floats are
written by ``repr`` and read back bit for bit.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import sqlite3
import threading
from typing import Any, Iterator, Sequence

from csro.errors import StoreError
from csro.llm import CallKey, LLMReply, LLMRequest, Message
from csro.seeding import new_secret


def dumps(value: Any, what: str) -> str:
    """JSON text (floats written by ``repr``, so they read back bit for bit)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from None


LLM_CALLS_TABLE = """
CREATE TABLE llm_calls (
    seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    messages TEXT NOT NULL, prefill TEXT NOT NULL, grammar TEXT, stop TEXT NOT NULL,
    max_tokens INTEGER NOT NULL, temperature REAL NOT NULL, seed INTEGER NOT NULL,
    text TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,
    tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, latency_s REAL NOT NULL,
    attempts INTEGER NOT NULL, error TEXT, reply_prefill TEXT NOT NULL,
    tokens_cached INTEGER NOT NULL DEFAULT 0, tokens_cache_write INTEGER NOT NULL DEFAULT 0, cost_usd REAL,
    waited_s REAL NOT NULL DEFAULT 0);
"""
LLM_COLUMNS = ("key, messages, prefill, grammar, stop, max_tokens, temperature, seed, text, provider, model, "
               "tokens_in, tokens_out, latency_s, attempts, error, reply_prefill, tokens_cached, tokens_cache_write, "
               "cost_usd, waited_s")
# Columns added to ``llm_calls`` after stores were made without them (``_migrate_llm_calls``).
_LLM_ADDED = (("tokens_cached", "INTEGER NOT NULL DEFAULT 0"), ("tokens_cache_write", "INTEGER NOT NULL DEFAULT 0"),
              ("cost_usd", "REAL"), ("waited_s", "REAL NOT NULL DEFAULT 0"))


# A run's secret, the key of the seeds its policies are scored with (``csro.seeding.match_root``):
# drawn when the run is created; a run made before it has the table empty (old derivation).
SECRET_TABLE = """
CREATE TABLE IF NOT EXISTS secret (id INTEGER PRIMARY KEY CHECK (id = 1), value TEXT NOT NULL);
"""
DRAW = "draw"  # the secret a store is created with: a new one


def keep_secret(conn: sqlite3.Connection, secret: str | None) -> None:
    """Store a new run's secret (``DRAW``: a new one; None: none, as a replay of a run made
    before secrets), in the transaction that creates the store."""
    conn.execute(SECRET_TABLE)
    if secret is not None:
        conn.execute("INSERT INTO secret VALUES (1, ?)", (new_secret() if secret == DRAW else secret,))


class SQLiteStore:
    """The shared plumbing; subclasses define ``create`` and their records.

    ``kind`` names the store in error messages ("run", "AOR run"); ``db_name`` is its file in
    the run directory and ``schema_version`` the version this code reads.
    """

    kind = "run"
    db_name = "run.db"
    schema_version = 1

    def __init__(self, directory: pathlib.Path, conn: sqlite3.Connection):
        self.directory = directory
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()

    @classmethod
    def _connect(cls, path: pathlib.Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{path} is not a csro {cls.kind} database ({exc})") from None
        return conn

    @classmethod
    def open(cls, directory: str | pathlib.Path):
        """The existing store in ``directory``."""
        directory = pathlib.Path(directory)
        path = directory / cls.db_name
        if not path.is_file():
            raise StoreError(f"no {cls.kind} at {directory} ({path} not found)")
        conn = cls._connect(path)
        try:
            row = conn.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{path} is not a csro {cls.kind} database ({exc})") from None
        if row is None or row[0] != cls.schema_version:
            conn.close()
            found = "no" if row is None else row[0]
            raise StoreError(f"{path} has schema version {found}; this csro reads version {cls.schema_version}")
        _migrate_llm_calls(conn)
        cls._migrate(conn)
        return cls(directory, conn)

    @classmethod
    def _migrate(cls, conn: sqlite3.Connection) -> None:
        """Additions to the schema that need no version change (none by default)."""

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------
    def _live(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the {self.kind} store at {self.directory} is closed")
        return self._conn

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One committed transaction, rolled back if the body raises."""
        with self._lock:
            conn = self._live()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence = ()) -> list[tuple]:
        with self._lock:
            return self._live().execute(sql, params).fetchall()

    # -- the run -------------------------------------------------------------------------
    def config(self) -> dict:
        return json.loads(self._read("SELECT config FROM run")[0][0])

    def set_config(self, data: dict) -> None:
        """Replace the recorded configuration (``csro resume --set`` of the fields that may change)."""
        text = dumps(data, "the run configuration")
        with self._write() as conn:
            conn.execute("UPDATE run SET config = ?", (text,))

    def set_final(self, data: dict) -> None:
        """The final result (replaces an earlier one)."""
        text = dumps(data, "the final result")
        with self._write() as conn:
            conn.execute("UPDATE run SET final = ?", (text,))

    def final(self) -> dict | None:
        text = self._read("SELECT final FROM run")[0][0]
        return None if text is None else json.loads(text)

    def secret(self) -> str | None:
        """The run's secret (``csro.seeding``); None for a run made before secrets. Never shown:
        not in the configuration, the status or the report."""
        if not self._read("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'secret'"):
            return None
        rows = self._read("SELECT value FROM secret")
        return rows[0][0] if rows else None

    # -- LLM calls (the recorder and the recording of ``csro.llm.LLMClient``) --------------
    def add_llm_call(self, request: LLMRequest, reply: LLMReply) -> None:
        """Record one call; the same key again with the same request and reply is a no-op."""
        if reply.key != request.key:
            raise StoreError(f"LLM reply {reply.key} does not answer request {request.key}")
        row = llm_row(request, reply)
        with self._write() as conn:
            old = conn.execute(f"SELECT {LLM_COLUMNS} FROM llm_calls WHERE key = ?", (row[0],)).fetchone()
            if old is not None:  # compared as stored (images attached to messages are not stored)
                if tuple(old) != row:
                    raise StoreError(f"LLM call {request.key} is already stored with a different request or reply")
                return
            conn.execute(f"INSERT INTO llm_calls ({LLM_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)

    def llm_call(self, key: CallKey) -> LLMReply | None:
        """The recorded reply of the call ``key`` (errors included), or None."""
        rows = self._read(f"SELECT {LLM_COLUMNS} FROM llm_calls WHERE key = ?", (str(key),))
        return llm_call(rows[0])[1] if rows else None

    def llm_calls(self) -> list[tuple[LLMRequest, LLMReply]]:
        """Every recorded call, in insertion order."""
        return [llm_call(r) for r in self._read(f"SELECT {LLM_COLUMNS} FROM llm_calls ORDER BY seq")]

    def llm_stats(self) -> dict:
        """Totals over every recorded call: calls, tokens in/out, errors, latency (seconds)."""
        calls, tin, tout, errors, latency = self._read(
            "SELECT COUNT(*), TOTAL(tokens_in), TOTAL(tokens_out), TOTAL(error IS NOT NULL), TOTAL(latency_s) "
            "FROM llm_calls")[0]
        return {"calls": calls, "tokens_in": int(tin), "tokens_out": int(tout), "errors": int(errors),
                "latency_s": latency}


_FREE_WHEN_PRICED = ("embedded", "files", "replay")  # the free providers when cost_usd was added


def _migrate_llm_calls(conn: sqlite3.Connection) -> None:
    """Give an older ``llm_calls`` table the cache, cost and waiting columns (no version
    change): its calls read as uncached and not waited for, the free providers'
    (``csro.llm.prices``) at cost 0, the others' cost unknown (NULL), as it was not recorded."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(llm_calls)")}
    missing = [(name, kind) for name, kind in _LLM_ADDED if name not in have]
    if not have or not missing:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for name, kind in missing:
            conn.execute(f"ALTER TABLE llm_calls ADD COLUMN {name} {kind}")
        if any(name == "cost_usd" for name, _ in missing):
            free = ", ".join("?" * len(_FREE_WHEN_PRICED))
            conn.execute(f"UPDATE llm_calls SET cost_usd = 0 WHERE provider IN ({free})", _FREE_WHEN_PRICED)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def llm_row(q: LLMRequest, r: LLMReply) -> tuple:
    """A call as its ``llm_calls`` row (message text only)."""
    messages = dumps([{"role": m.role, "content": m.content} for m in q.messages], "LLM messages")
    return (str(q.key), messages, q.prefill, q.grammar, dumps(list(q.stop), "LLM stop strings"), q.max_tokens,
            q.temperature, q.seed, r.text, r.provider, r.model, r.tokens_in, r.tokens_out, r.latency_s,
            r.attempts, r.error, r.prefill, r.tokens_cached, r.tokens_cache_write, r.cost_usd, r.waited_s)


def llm_call(row: tuple) -> tuple[LLMRequest, LLMReply]:
    """The (request, reply) of an ``llm_calls`` row."""
    (key, messages, prefill, grammar, stop, max_tokens, temperature, seed, text, provider, model,
     tokens_in, tokens_out, latency_s, attempts, error, reply_prefill, cached, cache_write, cost, waited) = row
    call_key = CallKey.parse(key)
    request = LLMRequest(call_key, tuple(Message(m["role"], m["content"]) for m in json.loads(messages)),
                         prefill, grammar, tuple(json.loads(stop)), max_tokens, temperature, seed)
    reply = LLMReply(call_key, text, provider, model, tokens_in, tokens_out, latency_s, attempts, error, reply_prefill,
                     cached, cache_write, cost, waited)
    return request, reply
