"""The run store: round trips, idempotent re-adds, conflicts, crash safety, threads, errors."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest

from csro.evaluation.payoff_table import PayoffTable
from csro.evaluation.payoff_table import MatchResult, record
from csro.llm._types import CallKey, LLMReply, LLMRequest, Message
from csro.store import PolicyRecord, RunStore, SigmaRecord, StoreError

# floats whose decimal form is long or extreme: they must come back bit for bit
AWKWARD = [0.1 + 0.2, 1 / 3, 1e-310, -0.0, 2.0**53 + 1, 123456789.123456789, math.inf, -math.inf]


def policy(i: int, source: str = "class P: pass", **kw) -> PolicyRecord:
    import hashlib
    fields = dict(id=f"p{i}", player=0, iteration=i, oracle="zero_shot", source=source, ref=None,
                  sha256=hashlib.sha256(source.encode()).hexdigest(), parent=f"p{i - 1}" if i else None,
                  call_keys=(f"{i}/propose/0", f"{i}/refine-1/0"),
                  info={"utility": 0.1 + 0.2, "attempts": [{"ok": False, "why": "syntax"}], "nested": {"x": [1, 2.5]}})
    fields.update(kw)
    return PolicyRecord(**fields)


def call(i: int, step: str = "propose", error: str | None = None, grammar: str | None = None) -> tuple[LLMRequest, LLMReply]:
    key = CallKey(i, step, i % 3)
    request = LLMRequest(key, (Message("system", "rules ü"), Message("user", f"write policy {i}")),
                         prefill="```python\nclass P:", grammar=grammar, stop=("```", "\n\n\n"),
                         max_tokens=512, temperature=0.7 + 0.1, seed=2**62 + i)
    reply = LLMReply(key, "" if error else f"  def act(self): return {i}\n```", "embedded", "qwen", 100 + i, 20 + i,
                     1 / 3 + i, 2 if error else 1, error, request.prefill)
    return request, reply


@pytest.fixture
def store(tmp_path):
    with RunStore.create(tmp_path / "run", {"game": "rrps", "iterations": 3, "floats": AWKWARD}) as s:
        yield s


# -- opening and errors ------------------------------------------------------------------------

def test_create_writes_a_wal_database_and_config_round_trips(tmp_path):
    config = {"game": "rrps", "llm": {"provider": "files", "model": None}, "floats": AWKWARD, "ü": "ö"}
    RunStore.create(tmp_path / "a" / "b", config).close()
    with RunStore.open(tmp_path / "a" / "b") as s:
        got = s.config()
    assert got == config
    assert [repr(x) for x in got["floats"]] == [repr(x) for x in AWKWARD]
    conn = sqlite3.connect(tmp_path / "a" / "b" / "run.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1,)]


def test_create_refuses_an_existing_run(tmp_path, store):
    with pytest.raises(StoreError, match=r"a run already exists at .*run\.db"):
        RunStore.create(store.directory, {})


def test_open_missing_run(tmp_path):
    with pytest.raises(StoreError, match=rf"^no run at {tmp_path} \({tmp_path}/run\.db not found\)$"):
        RunStore.open(tmp_path)


def test_open_a_file_that_is_not_a_database(tmp_path):
    (tmp_path / "run.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"run\.db is not a csro run database"):
        RunStore.open(tmp_path)


def test_open_a_database_of_something_else(tmp_path):
    sqlite3.connect(tmp_path / "run.db").execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match=r"not a csro run database \(no such table: schema_version\)"):
        RunStore.open(tmp_path)


def test_open_a_newer_schema(tmp_path, store):
    sqlite3.connect(store.directory / "run.db", isolation_level=None).execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StoreError, match=r"has schema version 99; this csro reads version 1$"):
        RunStore.open(store.directory)


def test_unserialisable_data_and_closed_store(store):
    with pytest.raises(StoreError, match="the data of event bad is not JSON-serialisable"):
        store.add_event(0, "bad", {"x": object()})
    assert store.events() == []  # nothing half-written
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.policies()


# -- round trips -------------------------------------------------------------------------------

def test_policies_round_trip_in_order_and_by_player(store):
    recs = [PolicyRecord("p0", 0, 0, "initial", None, "builtin:random", None, None),
            policy(1), policy(2, "class Q: pass", player=1), policy(3, "class R:\n    '''<b>ü</b>'''")]
    for r in recs:
        store.add_policy(r)
    assert store.policies() == recs
    assert store.policies(1) == [recs[2]]
    assert store.policies(0) == [recs[0], recs[1], recs[3]]
    assert store.policies(7) == []
    assert repr(store.policies()[1].info["utility"]) == repr(0.1 + 0.2)


def test_policy_re_add_is_idempotent_and_a_conflict_raises(store):
    store.add_policy(policy(1))
    store.add_policy(policy(1))
    store.add_policy(policy(1, info={"other": "info is not the identity"}))
    assert store.policies() == [policy(1)]
    with pytest.raises(StoreError, match="policy p1 is already stored with a different program"):
        store.add_policy(policy(1, "class Different: pass"))
    store.add_policy(PolicyRecord("p0", 0, 0, "initial", None, "builtin:random", None, None))
    with pytest.raises(StoreError, match="policy p0 is already stored"):
        store.add_policy(PolicyRecord("p0", 0, 0, "initial", None, "builtin:rock", None, None))


def test_matches_round_trip_filter_and_payoff_table(store):
    results = [MatchResult(("a", "b"), (AWKWARD[0], -AWKWARD[0]), 1),
               MatchResult(("b", "a"), (1.0, -1.0), 2, (1, "timeout", "call limit 5s exceeded")),
               MatchResult(("a", "c"), (0.0, 0.0), 3),
               MatchResult(("c", "c"), (0.5, -0.5), 4)]
    store.add_matches("meta", results)
    store.add_matches("eval", results[:1])
    assert store.matches("meta") == results
    assert store.matches("eval") == results[:1]
    assert store.matches("oracle") == []
    assert store.matches("meta", {"a", "b"}) == results[:2]
    assert store.matches("meta", ["c", "a", "zzz"]) == [results[2], results[3]]
    assert store.matches("meta", {"c"}) == [results[3]]
    assert store.matches("meta", set()) == []
    assert store.match_counts() == {"eval": 1, "meta": 4}


def test_match_re_add_keeps_the_first_result(store):
    first = MatchResult(("a", "b"), (1.0, -1.0), 7)
    store.add_matches("meta", [first])
    store.add_matches("meta", [first, MatchResult(("a", "b"), (-1.0, 1.0), 7, (0, "timeout", "slow")),
                               MatchResult(("a", "b"), (0.0, 0.0), 8)])
    assert store.matches("meta", {"a", "b"}) == [first, MatchResult(("a", "b"), (0.0, 0.0), 8)]
    store.add_matches("oracle", [first])  # another phase is another match
    assert store.match_counts() == {"meta": 2, "oracle": 1}


def test_unknown_phase(store):
    with pytest.raises(StoreError, match=r"unknown match phase 'metta' \(valid: meta, eval, oracle, check, trace\)"):
        store.add_matches("metta", [])
    with pytest.raises(StoreError, match="unknown match phase"):
        store.matches("final")


def test_sigmas_round_trip_idempotent_and_conflict(store):
    recs = [SigmaRecord(0, 0, ("p0",), (1.0,), "nash", 0.0),
            SigmaRecord(1, 0, ("p0", "p1"), (AWKWARD[1], 1 - AWKWARD[1]), "nash", None),
            SigmaRecord(1, 1, ("q0",), (1.0,), "uniform", 1e-310)]
    for r in reversed(recs):
        store.add_sigma(r)
    store.add_sigma(recs[1])
    assert store.sigmas() == recs
    with pytest.raises(StoreError, match="sigma of iteration 1, player 0 is already stored with different values"):
        store.add_sigma(SigmaRecord(1, 0, ("p0", "p1"), (0.5, 0.5), "nash", None))


def test_llm_calls_round_trip_every_field(store):
    calls = [call(0), call(1, "refine-2", grammar='root ::= "x"'), call(2, "repair-0-1", error="HTTP 503 after 3 attempts")]
    for q, r in calls:
        store.add_llm_call(q, r)
    assert store.llm_calls() == calls
    assert store.llm_call(CallKey(1, "refine-2", 1)) == calls[1][1]
    assert store.llm_call(CallKey(2, "repair-0-1", 2)).error == "HTTP 503 after 3 attempts"
    assert store.llm_call(CallKey(9, "propose")) is None
    assert store.llm_stats() == {"calls": 3, "tokens_in": 303, "tokens_out": 63, "errors": 1,
                                 "latency_s": sum(r.latency_s for _, r in calls)}


def test_llm_call_re_add_conflict_and_mismatched_key(store):
    q, r = call(1)
    store.add_llm_call(q, r)
    store.add_llm_call(q, r)
    assert len(store.llm_calls()) == 1
    with pytest.raises(StoreError, match="LLM call 1/propose/1 is already stored with a different request or reply"):
        store.add_llm_call(q, LLMReply(r.key, "other text", r.provider, r.model))
    with pytest.raises(StoreError, match="LLM reply 2/propose/2 does not answer request 1/propose/1"):
        store.add_llm_call(q, call(2)[1])


def test_events_iterations_and_final(store):
    store.add_event(1, "iteration_start", {"population": 1})
    store.add_event(1, "oracle_rejected", {"reason": "forfeits: timeout", "utility": AWKWARD[0]})
    store.add_event(2, "iteration_start", {"population": 2})
    events = store.events()
    assert [(e["iteration"], e["kind"]) for e in events] == [(1, "iteration_start"), (1, "oracle_rejected"),
                                                              (2, "iteration_start")]
    assert all(isinstance(e["time"], float) for e in events)
    assert store.events("oracle_rejected")[0]["data"] == {"reason": "forfeits: timeout", "utility": AWKWARD[0]}

    assert store.iterations() == []
    store.mark_iteration(1, {"pop_return": 0.25, "ci95": {"pop_return": 0.01}})
    store.mark_iteration(0, {"pop_return": -1.0})
    store.mark_iteration(1, {"pop_return": 0.5})
    assert store.iterations() == [{"iteration": 0, "pop_return": -1.0}, {"iteration": 1, "pop_return": 0.5}]

    assert store.final() is None
    store.set_final({"pop_return": 1.0, "nash_conv": None})
    final = {"pop_return": AWKWARD[0], "nash_conv": None, "per_opponent": {"greenberg": -0.5}, "population": ["p0"]}
    store.set_final(final)
    with RunStore.open(store.directory) as again:  # a second connection sees the committed rows
        assert again.final() == final
        assert again.iterations() == store.iterations()


# -- concurrency and crashes ---------------------------------------------------------------------

def test_many_threads_add_llm_calls(store):
    threads, per_thread, errors = 8, 40, []

    def work(t: int) -> None:
        try:
            for i in range(per_thread):
                q, r = call(t * 1000 + i)
                store.add_llm_call(q, r)
                store.llm_call(q.key)
                if i % 10 == 0:
                    store.llm_stats()
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert errors == []
    stored = store.llm_calls()
    assert len(stored) == threads * per_thread
    assert {q.key for q, _ in stored} == {call(t * 1000 + i)[0].key for t in range(threads) for i in range(per_thread)}
    assert store.llm_stats()["tokens_in"] == sum(100 + t * 1000 + i for t in range(threads) for i in range(per_thread))


WRITER = textwrap.dedent("""
    import sys
    from csro.evaluation.runner import MatchResult
    from csro.llm._types import CallKey, LLMReply, LLMRequest, Message
    from csro.store import RunStore
    store = RunStore.create(sys.argv[1], {"writer": True})
    i = 0
    while True:
        store.add_event(i, "tick", {"i": i, "pad": "x" * 2000})
        store.add_matches("meta", [MatchResult(("a", "b"), (float(i), -float(i)), s) for s in range(i * 5, i * 5 + 5)])
        key = CallKey(i, "propose")
        store.add_llm_call(LLMRequest(key, (Message("user", "go"),)), LLMReply(key, "x" * 500, "fake", "m"))
        print(i, flush=True)   # written only after all three commits of step i
        i += 1
""")


def test_kill_9_mid_writes_keeps_every_committed_row(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "run")], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        last = -1
        while last < 150:
            line = proc.stdout.readline()
            assert line, f"the writer died early (rc {proc.poll()})"
            last = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    conn = sqlite3.connect(tmp_path / "run" / "run.db")
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    with RunStore.open(tmp_path / "run") as s:
        ticks = [e["data"]["i"] for e in s.events("tick")]
        n = len(ticks)
        assert n >= last + 1  # every step reported as committed is there (the one in flight may be too)
        assert ticks == list(range(n))
        matches = s.matches("meta")
        assert len(matches) >= 5 * (last + 1)
        assert [m.seed for m in matches] == list(range(len(matches)))
        keys = [q.key.iteration for q, _ in s.llm_calls()]
        assert len(keys) >= last + 1 and keys == list(range(len(keys)))
        assert s.config() == {"writer": True}
        s.add_event(0, "resumed", {})  # the survivor is writable
        assert s.events("resumed")[0]["iteration"] == 0


def test_a_new_run_draws_a_secret_of_its_own_and_keeps_it(tmp_path):
    """The key of a run's match seeds (issue 37): drawn at creation, different per run, read back
    after reopening; given (a replay's) or none (a replay of a run made before secrets); never in
    the configuration."""
    with RunStore.create(tmp_path / "a", {"x": 1}) as a, RunStore.create(tmp_path / "b", {"x": 1}) as b:
        first, second = a.secret(), b.secret()
        assert len(first) == 64 and int(first, 16) and first != second
        assert first not in json.dumps(a.config())
    with RunStore.open(tmp_path / "a") as again:
        assert again.secret() == first
    with RunStore.create(tmp_path / "replay", {}, first) as replay, RunStore.create(tmp_path / "old", {}, None) as old:
        assert replay.secret() == first and old.secret() is None
    with sqlite3.connect(tmp_path / "a" / "run.db") as conn:  # a store made before secrets has no table
        conn.execute("DROP TABLE secret")
    with RunStore.open(tmp_path / "a") as legacy:
        assert legacy.secret() is None
