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

import dataclasses
import itertools
import json
import pathlib
import sqlite3
import time
from typing import Callable, Collection, Sequence

from csro.authorship import UNKNOWN, stored_author
from csro._sqlite import DRAW, LLM_CALLS_TABLE, SQLiteStore, StoreError, keep_secret
from csro._sqlite import dumps as _dumps
from csro.evaluation.payoff_table import MatchResult, PayoffTable, record

SCHEMA_VERSION = 1
DB_NAME = "run.db"
PHASES = ("meta", "eval", "oracle", "check", "trace")  # population table, vs evaluation population, candidate
# vs sigma, a candidate's smoke check, a match an oracle observes (``csro.simulate``)
CELL_PHASES = {"meta": ("meta", "oracle")}  # a population's cell holds what the oracle measured its member by

# The evolutionary search's programs (``csro.oracles.evolve``): added to version 1 without a
# version change (a run made before it gets the empty table when opened).
_PROGRAMS = """
CREATE TABLE IF NOT EXISTS programs (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, iteration INTEGER NOT NULL,
    generation INTEGER NOT NULL, island INTEGER NOT NULL, status TEXT NOT NULL,
    fitness REAL, data TEXT NOT NULL, time REAL NOT NULL);
"""

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    config TEXT NOT NULL, created REAL NOT NULL, final TEXT);
CREATE TABLE policies (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, player INTEGER NOT NULL,
    iteration INTEGER NOT NULL, oracle TEXT NOT NULL, source TEXT, ref TEXT, sha256 TEXT,
    parent TEXT, call_keys TEXT NOT NULL, info TEXT NOT NULL, author TEXT);
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
""" + LLM_CALLS_TABLE + """
CREATE TABLE events (
    seq INTEGER PRIMARY KEY, iteration INTEGER NOT NULL, kind TEXT NOT NULL,
    data TEXT NOT NULL, time REAL NOT NULL);
CREATE TABLE iterations (iteration INTEGER PRIMARY KEY, data TEXT NOT NULL);
""" + _PROGRAMS


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
      info: JSON data: utility against sigma, attempts, why it was chosen, the name its
        oracle measured it by (``played_as``; see ``cell_names``), ...
      author: who wrote the source (``csro.authorship``: model, grammar, example, builtin,
        file); a member stored before authorship was recorded reads as derived from its
        oracle, ref and call keys (``stored_author``).
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
    author: str = UNKNOWN


def cell_names(members: Sequence[PolicyRecord]) -> tuple[str, ...]:
    """The names the matches of a cell of the population (a pair, or a profile in seat order)
    are seeded and stored under.

    A candidate's matches are played once (issue 27): the members of the cell that joined
    last play under the name their oracle measured them by (``info["played_as"]``, the
    Arena's ``cand-<sha256[:12]>``), the others under their ids, as the oracle saw them. So
    the matches an oracle played against sigma's support are the new member's cells, same
    seeds and same rows, and joining the population plays only what is missing. A member
    recorded before this rule (no ``played_as``) plays under its id, as it did then.
    """
    last = max(m.iteration for m in members)
    return tuple(m.info.get("played_as", m.id) if m.iteration == last else m.id for m in members)


def as_members(members: Sequence[PolicyRecord], results: Sequence[MatchResult]) -> list[MatchResult]:
    """The results of a cell (stored under ``cell_names(members)``, a pair in either seat
    order) under the members' ids."""
    names, ids = cell_names(members), tuple(m.id for m in members)
    by_name = dict(zip(names, ids))  # two players' one program shares a name: then seat order decides
    return [dataclasses.replace(r, policies=ids if r.policies == names else tuple(by_name[n] for n in r.policies))
            for r in results]


@dataclasses.dataclass(frozen=True)
class SigmaRecord:
    """The meta-strategy of one player after an iteration (sigma_k over ``names``)."""

    iteration: int
    player: int
    names: tuple[str, ...]
    sigma: tuple[float, ...]
    solver: str
    meta_nash_conv: float | None


class RunStore(SQLiteStore):
    """The SQLite store of one run directory. Use ``create`` or ``open``, not the constructor."""

    kind = "run"
    db_name = DB_NAME
    schema_version = SCHEMA_VERSION

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: str | pathlib.Path, config: dict, secret: str | None = DRAW) -> "RunStore":
        """A new run in ``directory`` (created if needed) with its configuration and the secret
        of its match seeds: a new one (``DRAW``), the one of the run it replays, or None (it
        replays a run made before secrets: its matches keep the old derivation)."""
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
                keep_secret(conn, secret)
        except sqlite3.OperationalError as exc:  # another process created it meanwhile
            store.close()
            raise StoreError(f"cannot create a run at {directory} ({exc})") from None
        return store

    @classmethod
    def _migrate(cls, conn: sqlite3.Connection) -> None:
        conn.execute(_PROGRAMS)
        if "author" not in {row[1] for row in conn.execute("PRAGMA table_info(policies)")}:
            try:  # NULL: stored before authorship was recorded (``PolicyRecord.author``)
                conn.execute("ALTER TABLE policies ADD COLUMN author TEXT")
            except sqlite3.OperationalError:  # another process opening the same run added it meanwhile
                if "author" not in {row[1] for row in conn.execute("PRAGMA table_info(policies)")}:
                    raise

    # -- policies ------------------------------------------------------------------------
    def add_policy(self, rec: PolicyRecord) -> None:
        """Insert a policy; the same id again with the same program is a no-op."""
        row = (rec.id, rec.player, rec.iteration, rec.oracle, rec.source, rec.ref, rec.sha256, rec.parent,
               _dumps(list(rec.call_keys), f"policy {rec.id}'s call_keys"), _dumps(rec.info, f"policy {rec.id}'s info"),
               rec.author)
        with self._write() as conn:
            old = conn.execute("SELECT sha256, ref FROM policies WHERE id = ?", (rec.id,)).fetchone()
            if old is not None:
                if old != (rec.sha256, rec.ref):
                    raise StoreError(f"policy {rec.id} is already stored with a different program "
                                     f"(sha256 {old[0]} ref {old[1]}, not {rec.sha256} ref {rec.ref})")
                return
            conn.execute("INSERT INTO policies (id, player, iteration, oracle, source, ref, sha256, parent, "
                         "call_keys, info, author) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def policies(self, player: int | None = None) -> list[PolicyRecord]:
        """The stored policies (of one player, if given) in insertion order."""
        sql = "SELECT id, player, iteration, oracle, source, ref, sha256, parent, call_keys, info, author FROM policies"
        rows = self._read(sql + " ORDER BY seq") if player is None else self._read(
            sql + " WHERE player = ? ORDER BY seq", (player,))
        out = []
        for r in rows:
            keys = tuple(json.loads(r[8]))
            out.append(PolicyRecord(*r[:8], call_keys=keys, info=json.loads(r[9]),
                                    author=r[10] if r[10] is not None else stored_author(r[3], r[5], keys)))
        return out

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

    def cell_matches(self, phase: str, names: Collection[str]) -> list[MatchResult]:
        """The results among ``names`` that count for a cell of ``phase``: its own, and for the
        population's table (``meta``) the oracle's too (``CELL_PHASES``; ``cell_names``), each
        seed once."""
        by_seed: dict[int, MatchResult] = {}
        for read in CELL_PHASES.get(phase, (phase,)):
            for r in self.matches(read, names):
                by_seed.setdefault(r.seed, r)
        return list(by_seed.values())

    def population_table(self) -> PayoffTable:
        """The population's own payoff table under member ids, from the matches of every pair
        of one shared population, or every profile of per-player populations (``cell_names``)."""
        policies = self.policies()
        populations = [[p for p in policies if p.player == q] for q in sorted({p.player for p in policies})]
        if len(populations) == 1:
            cells = [(a, b) for i, a in enumerate(policies) for b in policies[:i]]
        else:  # no population yet: no cell
            cells = list(itertools.product(*populations)) if populations else []
        by_names: dict[tuple[str, ...], dict[int, MatchResult]] = {}
        for read in CELL_PHASES["meta"]:
            for r in self.matches(read):
                by_names.setdefault(tuple(sorted(r.policies)), {}).setdefault(r.seed, r)
        table = PayoffTable()
        for cell in cells:
            names = cell_names(cell)
            rows = by_names.get(tuple(sorted(names)), {}).values()
            record(table, as_members(cell, [r for r in rows if len(populations) == 1 or r.policies == names]))
        return table

    def match_counts(self) -> dict[str, int]:
        """The number of stored matches per phase."""
        return dict(self._read("SELECT phase, COUNT(*) FROM matches GROUP BY phase ORDER BY phase"))

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


@dataclasses.dataclass(frozen=True)
class StoreLog:
    """The run store as one best-response call may see it (``csro.oracles.OracleLog``).

    Attributes:
      store: the run store.
      iteration: the iteration events are recorded under.
      player: whose sigma ``support`` reads.
      record: records an event of that iteration (the loop's ``log``, which also tells the UI).
    """

    store: RunStore
    iteration: int
    player: int
    record: Callable[[str, dict], None]

    def event(self, kind: str, data: dict) -> None:
        self.record(kind, data)

    def add_program(self, data: dict, fitness: float | None) -> None:
        self.store.add_program(data, fitness)

    def programs(self, before_iteration: int) -> list[dict]:
        return self.store.programs(before_iteration=before_iteration)

    def support(self, iteration: int) -> dict[str, float]:
        sigma = next((s for s in self.store.sigmas() if s.iteration == iteration and s.player == self.player), None)
        return {} if sigma is None else {n: w for n, w in zip(sigma.names, sigma.sigma) if w > 0}
