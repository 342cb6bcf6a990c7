"""The run store: ``DIR/run.db``, one SQLite database that is the truth of a CSRO run.

Everything a run produces is written when it is produced, each write its own committed
transaction (or one small explicit batch): the population's policies with their source and
lineage, the matches of every phase, the meta-strategies sigma_k, every LLM call (request
and reply, errors included), the oracle's events, the per-iteration metrics and the final
evaluation. ``kill -9`` at any moment therefore loses at most the work in flight, and a
resumed run continues from what is stored (design principle of this project; the CSRO
paper, Hennes et al. arXiv 2603.10098, does not discuss persistence or resumption).

SQLite runs with a write-ahead log and ``synchronous=NORMAL``: a committed transaction
survives the death of the writing process (it may be lost on a power failure, which a run
can recover from by resuming). One ``RunStore`` holds one connection shared by several
threads (the LLM client records calls from its worker threads) behind a lock.

Re-adding a record is idempotent where a resumed run re-walks its steps: the same policy
id with the same program, a match with the same (phase, policies, seed), an identical
sigma or LLM call are no-ops. A *different* record under the same identity raises
``StoreError`` (a resumed run that would diverge from the stored one), except for matches:
a replayed match keeps its first stored result (a policy that timed out once may not time
out again; the store decides).

Secrets: the store holds only what it is given. Callers never pass an API key (the
configuration names the environment variable, not its value), so none reaches the store
or the report built from it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pathlib
import sqlite3
import threading
import time
from typing import Any, Collection, Iterator, Sequence

from csro.errors import CsroError
from csro.evaluation.payoff_table import PayoffTable
from csro.evaluation.runner import MatchResult, record
from csro.llm._types import CallKey, LLMReply, LLMRequest, Message

SCHEMA_VERSION = 1
DB_NAME = "run.db"
PHASES = ("meta", "eval", "oracle")  # population table, vs evaluation population, candidate vs sigma

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    config TEXT NOT NULL, created REAL NOT NULL, final TEXT);
CREATE TABLE policies (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, player INTEGER NOT NULL,
    iteration INTEGER NOT NULL, oracle TEXT NOT NULL, source TEXT, ref TEXT, sha256 TEXT,
    parent TEXT, call_keys TEXT NOT NULL, info TEXT NOT NULL);
CREATE TABLE matches (
    seq INTEGER PRIMARY KEY, phase TEXT NOT NULL, policies TEXT NOT NULL,
    returns TEXT NOT NULL, seed INTEGER NOT NULL, forfeit TEXT,
    UNIQUE (phase, policies, seed));
CREATE TABLE match_policies (
    name TEXT NOT NULL, match INTEGER NOT NULL REFERENCES matches(seq),
    PRIMARY KEY (name, match)) WITHOUT ROWID;
CREATE INDEX match_policies_by_match ON match_policies (match);
CREATE TABLE sigmas (
    iteration INTEGER NOT NULL, player INTEGER NOT NULL, names TEXT NOT NULL,
    sigma TEXT NOT NULL, solver TEXT NOT NULL, meta_nash_conv REAL,
    PRIMARY KEY (iteration, player));
CREATE TABLE llm_calls (
    seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    messages TEXT NOT NULL, prefill TEXT NOT NULL, grammar TEXT, stop TEXT NOT NULL,
    max_tokens INTEGER NOT NULL, temperature REAL NOT NULL, seed INTEGER NOT NULL,
    text TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,
    tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, latency_s REAL NOT NULL,
    attempts INTEGER NOT NULL, error TEXT, reply_prefill TEXT NOT NULL);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY, iteration INTEGER NOT NULL, kind TEXT NOT NULL,
    data TEXT NOT NULL, time REAL NOT NULL);
CREATE TABLE iterations (iteration INTEGER PRIMARY KEY, data TEXT NOT NULL);
""" + """
CREATE TABLE IF NOT EXISTS programs (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, iteration INTEGER NOT NULL,
    generation INTEGER NOT NULL, island INTEGER NOT NULL, status TEXT NOT NULL,
    fitness REAL, data TEXT NOT NULL, time REAL NOT NULL);
"""
# The evolutionary search's programs (``csro.oracles.evolve``): added to version 1 without a
# version change (a run made before it gets the empty table when opened).
_PROGRAMS = _SCHEMA[_SCHEMA.index("CREATE TABLE IF NOT EXISTS programs"):]


class StoreError(CsroError):
    """The run store is missing, not a csro run, or asked to store a conflicting record."""


@dataclasses.dataclass(frozen=True)
class PolicyRecord:
    """One member of a population.

    Attributes:
      id: ``p0``, ``p1``, ...: unique in the run; also the policy's name in payoff tables.
      player: population index (0 for symmetric games, which share one population).
      iteration: the PSRO iteration that added it (0 for the initial policy).
      oracle: ``initial``, ``zero_shot``, ``linear_refinement``, ``reflect``, ...
      source: the Python source (None for a built-in).
      ref: ``builtin:NAME`` for a built-in, else None.
      sha256: of the source.
      parent: the id of the policy it was refined from, if any.
      call_keys: ``str(CallKey)`` of the LLM calls that made it.
      info: JSON data: utility against sigma, attempts, why it was chosen, ...
    """

    id: str
    player: int
    iteration: int
    oracle: str
    source: str | None
    ref: str | None
    sha256: str | None
    parent: str | None
    call_keys: tuple[str, ...] = ()
    info: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class SigmaRecord:
    """The meta-strategy of one player after an iteration (sigma_k over ``names``)."""

    iteration: int
    player: int
    names: tuple[str, ...]
    sigma: tuple[float, ...]
    solver: str
    meta_nash_conv: float | None


def _dumps(value: Any, what: str) -> str:
    """JSON text (floats written by ``repr``, so they read back bit for bit)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serialisable: {exc}") from None


class RunStore:
    """The SQLite store of one run directory. Use ``create`` or ``open``, not the constructor."""

    def __init__(self, directory: pathlib.Path, conn: sqlite3.Connection):
        self.directory = directory
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()

    # -- opening -------------------------------------------------------------------------
    @staticmethod
    def _connect(path: pathlib.Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{path} is not a csro run database ({exc})") from None
        return conn

    @classmethod
    def create(cls, directory: str | pathlib.Path, config: dict) -> "RunStore":
        """A new run in ``directory`` (created if needed) with its configuration."""
        directory = pathlib.Path(directory)
        path = directory / DB_NAME
        if path.exists():
            raise StoreError(f"a run already exists at {directory} ({path}); resume it or choose another directory")
        config_json = _dumps(config, "the run configuration")
        directory.mkdir(parents=True, exist_ok=True)
        store = cls(directory, cls._connect(path))
        try:
            with store._write() as conn:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
                conn.execute("INSERT INTO run (id, config, created) VALUES (1, ?, ?)", (config_json, time.time()))
        except sqlite3.OperationalError as exc:  # another process created it meanwhile
            store.close()
            raise StoreError(f"cannot create a run at {directory} ({exc})") from None
        return store

    @classmethod
    def open(cls, directory: str | pathlib.Path) -> "RunStore":
        """The existing run in ``directory``."""
        directory = pathlib.Path(directory)
        path = directory / DB_NAME
        if not path.is_file():
            raise StoreError(f"no run at {directory} ({path} not found)")
        conn = cls._connect(path)
        try:
            row = conn.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{path} is not a csro run database ({exc})") from None
        if row is None or row[0] != SCHEMA_VERSION:
            conn.close()
            found = "no" if row is None else row[0]
            raise StoreError(f"{path} has schema version {found}; this csro reads version {SCHEMA_VERSION}")
        conn.execute(_PROGRAMS)
        return cls(directory, conn)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------
    def _live(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the run store at {self.directory} is closed")
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

    def set_final(self, data: dict) -> None:
        """The final evaluation (replaces an earlier one)."""
        text = _dumps(data, "the final evaluation")
        with self._write() as conn:
            conn.execute("UPDATE run SET final = ?", (text,))

    def final(self) -> dict | None:
        text = self._read("SELECT final FROM run")[0][0]
        return None if text is None else json.loads(text)

    # -- policies ------------------------------------------------------------------------
    def add_policy(self, rec: PolicyRecord) -> None:
        """Insert a policy; the same id again with the same program is a no-op."""
        row = (rec.id, rec.player, rec.iteration, rec.oracle, rec.source, rec.ref, rec.sha256, rec.parent,
               _dumps(list(rec.call_keys), f"policy {rec.id}'s call_keys"), _dumps(rec.info, f"policy {rec.id}'s info"))
        with self._write() as conn:
            old = conn.execute("SELECT sha256, ref FROM policies WHERE id = ?", (rec.id,)).fetchone()
            if old is not None:
                if old != (rec.sha256, rec.ref):
                    raise StoreError(f"policy {rec.id} is already stored with a different program "
                                     f"(sha256 {old[0]} ref {old[1]}, not {rec.sha256} ref {rec.ref})")
                return
            conn.execute("INSERT INTO policies (id, player, iteration, oracle, source, ref, sha256, parent, "
                         "call_keys, info) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def policies(self, player: int | None = None) -> list[PolicyRecord]:
        """The stored policies (of one player, if given) in insertion order."""
        sql = "SELECT id, player, iteration, oracle, source, ref, sha256, parent, call_keys, info FROM policies"
        rows = self._read(sql + " ORDER BY seq") if player is None else self._read(
            sql + " WHERE player = ? ORDER BY seq", (player,))
        return [PolicyRecord(*r[:8], call_keys=tuple(json.loads(r[8])), info=json.loads(r[9])) for r in rows]

    # -- matches -------------------------------------------------------------------------
    def add_matches(self, phase: str, results: Sequence[MatchResult]) -> None:
        """Store match results in one transaction; a (phase, policies, seed) already stored is kept."""
        _check_phase(phase)
        with self._write() as conn:
            for res in results:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO matches (phase, policies, returns, seed, forfeit) VALUES (?, ?, ?, ?, ?)",
                    (phase, _dumps(list(res.policies), "match policies"), _dumps(list(res.returns), "match returns"),
                     res.seed, None if res.forfeit is None else _dumps(list(res.forfeit), "match forfeit")))
                if cur.rowcount == 1:
                    conn.executemany("INSERT INTO match_policies (name, match) VALUES (?, ?)",
                                     [(name, cur.lastrowid) for name in set(res.policies)])

    def matches(self, phase: str, names: Collection[str] | None = None) -> list[MatchResult]:
        """The results of ``phase`` whose policies are all in ``names`` (if given), in insertion order."""
        _check_phase(phase)
        if names is None:
            rows = self._read("SELECT seq, policies, returns, seed, forfeit FROM matches WHERE phase = ? "
                              "ORDER BY seq", (phase,))
        else:
            rows = self._read(_MATCHES_AMONG, (_dumps(sorted(set(names)), "names"), phase))
        return [MatchResult(tuple(json.loads(policies)), tuple(json.loads(returns)), seed,
                            None if forfeit is None else tuple(json.loads(forfeit)))
                for _, policies, returns, seed, forfeit in rows]

    def match_counts(self) -> dict[str, int]:
        """The number of stored matches per phase."""
        return dict(self._read("SELECT phase, COUNT(*) FROM matches GROUP BY phase ORDER BY phase"))

    def payoff_table(self, phase: str) -> PayoffTable:
        """The payoff table of every stored match of ``phase`` (``csro.evaluation.runner.record``)."""
        table = PayoffTable()
        record(table, self.matches(phase))
        return table

    # -- meta-strategies -----------------------------------------------------------------
    def add_sigma(self, rec: SigmaRecord) -> None:
        """Store sigma_k of one player; re-adding an identical record is a no-op."""
        with self._write() as conn:
            old = conn.execute("SELECT names, sigma, solver, meta_nash_conv FROM sigmas WHERE iteration = ? "
                               "AND player = ?", (rec.iteration, rec.player)).fetchone()
            if old is not None:
                if _sigma(rec.iteration, rec.player, *old) != rec:
                    raise StoreError(f"sigma of iteration {rec.iteration}, player {rec.player} is already stored "
                                     f"with different values")
                return
            conn.execute("INSERT INTO sigmas VALUES (?, ?, ?, ?, ?, ?)",
                         (rec.iteration, rec.player, _dumps(list(rec.names), "sigma names"),
                          _dumps([float(x) for x in rec.sigma], "sigma"), rec.solver, rec.meta_nash_conv))

    def sigmas(self) -> list[SigmaRecord]:
        """Every stored sigma, by iteration then player."""
        return [_sigma(*r) for r in self._read("SELECT * FROM sigmas ORDER BY iteration, player")]

    # -- LLM calls -----------------------------------------------------------------------
    def add_llm_call(self, request: LLMRequest, reply: LLMReply) -> None:
        """Record one call; the same key again with the same request and reply is a no-op."""
        if reply.key != request.key:
            raise StoreError(f"LLM reply {reply.key} does not answer request {request.key}")
        row = _llm_row(request, reply)
        with self._write() as conn:
            old = conn.execute(f"SELECT {_LLM_COLUMNS} FROM llm_calls WHERE key = ?", (row[0],)).fetchone()
            if old is not None:
                if _llm_call(old) != (request, reply):
                    raise StoreError(f"LLM call {request.key} is already stored with a different request or reply")
                return
            conn.execute(f"INSERT INTO llm_calls ({_LLM_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)

    def llm_call(self, key: CallKey) -> LLMReply | None:
        """The recorded reply of the call ``key`` (errors included), or None."""
        rows = self._read(f"SELECT {_LLM_COLUMNS} FROM llm_calls WHERE key = ?", (str(key),))
        return _llm_call(rows[0])[1] if rows else None

    def llm_calls(self) -> list[tuple[LLMRequest, LLMReply]]:
        """Every recorded call, in insertion order."""
        return [_llm_call(r) for r in self._read(f"SELECT {_LLM_COLUMNS} FROM llm_calls ORDER BY seq")]

    def llm_stats(self) -> dict:
        """Totals over every recorded call: calls, tokens in/out, errors, latency (seconds)."""
        calls, tin, tout, errors, latency = self._read(
            "SELECT COUNT(*), TOTAL(tokens_in), TOTAL(tokens_out), TOTAL(error IS NOT NULL), TOTAL(latency_s) "
            "FROM llm_calls")[0]
        return {"calls": calls, "tokens_in": int(tin), "tokens_out": int(tout), "errors": int(errors),
                "latency_s": latency}

    # -- events and iterations ------------------------------------------------------------
    def add_event(self, iteration: int, kind: str, data: dict) -> None:
        """Append an event (``iteration_start``, ``oracle_candidate``, ``oracle_rejected``, ...)."""
        text = _dumps(data, f"the data of event {kind}")
        with self._write() as conn:
            conn.execute("INSERT INTO events (iteration, kind, data, time) VALUES (?, ?, ?, ?)",
                         (iteration, kind, text, time.time()))

    def events(self, kind: str | None = None) -> list[dict]:
        """The events (of one kind, if given) in order: ``{"iteration", "kind", "data", "time"}``."""
        sql = "SELECT iteration, kind, data, time FROM events"
        rows = self._read(sql + " ORDER BY seq") if kind is None else self._read(
            sql + " WHERE kind = ? ORDER BY seq", (kind,))
        return [{"iteration": i, "kind": k, "data": json.loads(d), "time": t} for i, k, d, t in rows]

    # -- the evolutionary search's programs --------------------------------------------------
    def add_program(self, data: dict, fitness: float | None) -> None:
        """Insert or update a program of the search (``csro.oracles.evolve.Program`` as a dict).

        The same id again with the same source updates its status, scores and fitness (a
        program's scores grow when new opponents appear); a different source raises."""
        text = _dumps(data, f"program {data['id']}")
        with self._write() as conn:
            old = conn.execute("SELECT data FROM programs WHERE id = ?", (data["id"],)).fetchone()
            if old is not None:
                if json.loads(old[0]).get("source") != data.get("source"):
                    raise StoreError(f"program {data['id']} is already stored with a different source")
                conn.execute("UPDATE programs SET status = ?, fitness = ?, data = ? WHERE id = ?",
                             (data["status"], fitness, text, data["id"]))
                return
            conn.execute("INSERT INTO programs (id, iteration, generation, island, status, fitness, data, time) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (data["id"], data["iteration"], data["generation"], data["island"], data["status"],
                          fitness, text, time.time()))

    def programs(self, before_iteration: int | None = None) -> list[dict]:
        """The stored programs in insertion order, each with its ``fitness`` (as last stored)."""
        sql = "SELECT data, fitness FROM programs"
        rows = self._read(sql + " ORDER BY seq") if before_iteration is None else self._read(
            sql + " WHERE iteration < ? ORDER BY seq", (before_iteration,))
        return [{**json.loads(d), "fitness": f} for d, f in rows]

    def mark_iteration(self, iteration: int, data: dict) -> None:
        """Iteration ``iteration`` is finished, with its metrics (replaces an earlier mark)."""
        text = _dumps(data, f"the data of iteration {iteration}")
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO iterations VALUES (?, ?)", (iteration, text))

    def iterations(self) -> list[dict]:
        """The finished iterations in order: ``[{"iteration": k, **data}]``."""
        return [{"iteration": k, **json.loads(d)} for k, d in self._read("SELECT * FROM iterations ORDER BY iteration")]


# The matches of phase ?2 among the names of the JSON list ?1: walked from the (name, match)
# index of the wanted names (CROSS JOIN fixes that loop order), so the cost grows with the
# matches of those names, not with the phase; a match with any other policy is left out.
_MATCHES_AMONG = """
WITH wanted(name) AS (SELECT value FROM json_each(?1))
SELECT DISTINCT m.seq, m.policies, m.returns, m.seed, m.forfeit
FROM match_policies AS mp CROSS JOIN matches AS m ON m.seq = mp.match
WHERE mp.name IN wanted AND m.phase = ?2
  AND NOT EXISTS (SELECT 1 FROM match_policies AS o WHERE o.match = m.seq AND o.name NOT IN wanted)
ORDER BY m.seq"""


def _check_phase(phase: str) -> None:
    if phase not in PHASES:
        raise StoreError(f"unknown match phase {phase!r} (valid: {', '.join(PHASES)})")


def _sigma(iteration: int, player: int, names: str, sigma: str, solver: str, conv: float | None) -> SigmaRecord:
    return SigmaRecord(iteration, player, tuple(json.loads(names)), tuple(json.loads(sigma)), solver, conv)


_LLM_COLUMNS = ("key, messages, prefill, grammar, stop, max_tokens, temperature, seed, text, provider, model, "
                "tokens_in, tokens_out, latency_s, attempts, error, reply_prefill")


def _llm_row(q: LLMRequest, r: LLMReply) -> tuple:
    messages = _dumps([{"role": m.role, "content": m.content} for m in q.messages], "LLM messages")
    return (str(q.key), messages, q.prefill, q.grammar, _dumps(list(q.stop), "LLM stop strings"), q.max_tokens,
            q.temperature, q.seed, r.text, r.provider, r.model, r.tokens_in, r.tokens_out, r.latency_s,
            r.attempts, r.error, r.prefill)


def _llm_call(row: tuple) -> tuple[LLMRequest, LLMReply]:
    (key, messages, prefill, grammar, stop, max_tokens, temperature, seed, text, provider, model,
     tokens_in, tokens_out, latency_s, attempts, error, reply_prefill) = row
    call_key = CallKey.parse(key)
    request = LLMRequest(call_key, tuple(Message(m["role"], m["content"]) for m in json.loads(messages)),
                         prefill, grammar, tuple(json.loads(stop)), max_tokens, temperature, seed)
    reply = LLMReply(call_key, text, provider, model, tokens_in, tokens_out, latency_s, attempts, error, reply_prefill)
    return request, reply
