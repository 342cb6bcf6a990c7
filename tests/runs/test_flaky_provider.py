"""A flaky LLM provider never changes what a run computes (issue 38): real ``csro run`` and
``csro resume`` subprocesses against a fault-injecting server of each hosted API's shape
(``tests/llm/_faults.py``, on 127.0.0.1, replies a function of the request alone).

- a burst of rate limits and then every fault kind on every request: the run ends with the
  populations, sigma, final metrics and number of recorded calls of a run without faults;
- the server gone for good mid-run (OpenAI's shape: a refused connection is the same for every
  API): ``csro run`` stops by itself, exit 4, one line naming the
  provider, what it said and ``csro resume DIR``; with the server back, ``csro resume DIR``
  ends like the run without faults;
- a refused key stops at once, naming the variable to set, and nothing is recorded for it;
- a discovery run (``kind: discover``) stopped by a server gone for good resumes to the search
  of a run without faults; a reproduction grid stops with its cell.
"""

from __future__ import annotations

import hashlib
import json
import pathlib

import pytest
import yaml

from csro.errors import ProviderStopped
from csro.store import RunStore
from run_helpers import POLICIES, csro, same_run, small_config, status, write_config
from tests.discover.test_discover_runs import MISPLACED, QUADRATIC
from tests.llm._faults import FAULTS, FaultServer

KINDS = ("openai", "gemini", "anthropic")
SOURCES = sorted(POLICIES.values())
# small waits for the tests: a 1 s Retry-After and timeout, a few seconds of retrying
LLM = {"model": "m-1", "api_key_env": "CSRO_TEST_KEY", "timeout_s": 1.0, "backoff_s": 0.05,
       "retry_budget_s": 6.0, "concurrency": 2}


def reply_for(body: dict) -> str:
    """A policy chosen by the request alone (its JSON, canonical)."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
    return f"```python\n{SOURCES[digest[0] % len(SOURCES)]}```"


def _config(tmp_path, replies, kind: str, url: str, **llm) -> str:
    config = small_config(replies)
    # two samples a call: two calls in flight at once meet the faults together (one gate)
    config["oracle"] = {**config["oracle"], "prompt": "plain", "max_tokens": 300, "samples": 2}
    config["llm"] = {"provider": kind, "base_url": url, **LLM, **llm}
    return write_config(tmp_path / f"{kind}-{abs(hash(url)) % 10**6}.yaml", config)


def _outcome(s: dict) -> dict:
    return {"populations": [[m["sha256"] for m in p] for p in s["populations"]], "sigmas": s["sigmas"],
            "final": s["final"], "calls": s["llm"]["calls"], "errors": s["llm"]["errors"]}


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("CSRO_TEST_KEY", "sk-test-flaky-0123456789")


def _same_run(source: pathlib.Path, directory: pathlib.Path, kind: str, url: str) -> pathlib.Path:
    """``source``'s configuration and secret (its match seeds, issue 37) in ``directory``,
    asking the server at ``url``: resumed, it is that run played again from its start."""
    with RunStore.open(source) as store:
        llm = store.config()["llm"]
    return same_run(source, directory, llm={**llm, "provider": kind, "base_url": url})


def _clean(run: pathlib.Path, kind: str) -> dict:
    """The outcome of ``run``'s run played from its start against a server without faults."""
    with FaultServer(kind, reply_for) as server:
        clean = _same_run(run, run.parent / "clean", kind, server.url)
        csro("resume", clean)
    s = status(clean)
    assert s["done"] and s["llm"]["calls"] == 6 and s["llm"]["retried"] == 0 and s["llm"]["errors"] == 0
    assert len(s["populations"][0]) > 1  # the model's programs joined
    return _outcome(s)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_burst_of_rate_limits_and_every_fault_change_nothing(kind, tmp_path, replies):
    with FaultServer(kind, reply_for, burst_s=2.0, failures_per_reply=2, slow_s=1.5) as server:
        done = csro("run", _config(tmp_path, replies, kind, server.url), "--out", tmp_path / "run")
    assert set(server.injected) == {"burst", *FAULTS}, server.injected  # every fault was met
    s = status(tmp_path / "run")
    assert s["done"] and _outcome(s) == _clean(tmp_path / "run", kind)
    assert s["llm"]["retried"] > 0 and s["llm"]["waited_s"] > 1.0  # the 2 s burst, at least
    assert "waiting for " in done.stderr and ", retry in " in done.stderr  # the live line, as a log line
    shown = " ".join(csro("status", tmp_path / "run").stdout.split())  # Rich wraps at 80 columns where the numbers fall
    # the count the store holds: not always every call, since the server fails "whichever requests
    # come", and a call that arrives when the faults before a reply are spent goes through at once
    assert f"{s['llm']['retried']} calls retried" in shown and "s waiting for the provider" in shown
    assert "calls retried (a flaky provider)" in (tmp_path / "run" / "report.html").read_text()


@pytest.mark.slow
def test_a_server_gone_for_good_stops_the_run_and_resume_ends_like_the_clean_run(tmp_path, replies):
    # One wire format (issue 39): a server gone is a refused connection whatever API it spoke;
    # each API's own error bodies, overload included, are the burst test's, for every kind.
    kind = "openai"
    directory = tmp_path / "run"
    with FaultServer(kind, reply_for, gone_after=1, failures_per_reply=1, faults=("overload",)) as server:
        stopped = csro("run", _config(tmp_path, replies, kind, server.url), "--out", directory, check=False)
    assert stopped.returncode == 4, stopped.stderr
    last, = [line for line in stopped.stderr.splitlines() if line.startswith("stopped: ")]
    assert last.startswith(f"stopped: {kind} at {server.url}") and "ConnectError" in last
    assert last.endswith(f"continue with: csro resume {directory}")
    assert "oracle failed" not in stopped.stderr and "grammar" not in stopped.stderr
    s = status(directory)
    assert not s["done"] and s["stopped_by"] == "provider" and s["llm"]["calls"] == 1 and s["llm"]["errors"] == 0
    assert s["llm"]["retried"] == s["llm"]["usage"]["total"]["retried"] + 1  # the stopped call counts
    assert s["llm"]["waited_s"] > s["llm"]["usage"]["total"]["waited_s"]
    assert "stopped by the LLM provider: " in (directory / "report.html").read_text()
    assert "stopped by the LLM provider" in " ".join(csro("status", directory).stdout.split())

    clean = _clean(directory, kind)
    with FaultServer(kind, reply_for, port=server.port) as back:
        csro("resume", directory, "--set", "llm.retry_budget_s=30")  # waiting longer changes no result
    assert back.answered == clean["calls"] - 1  # the recorded call was not asked again
    s = status(directory)
    assert s["done"] and s["stopped"] is None and _outcome(s) == clean


@pytest.mark.parametrize("kind, status_code", [("openai", 401), ("anthropic", 403)])
def test_a_refused_key_stops_at_once_naming_the_variable(kind, status_code, tmp_path, replies):
    refusal = (status_code, {"error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    with FaultServer(kind, reply_for, always=refusal) as server:
        stopped = csro("run", _config(tmp_path, replies, kind, server.url), "--out", tmp_path / "run", check=False)
    assert stopped.returncode == 4, stopped.stderr
    # the iteration's two samples: the second may be sent before the first's refusal stops the
    # run, or not at all; neither is retried
    assert 1 <= server.requests <= 2
    assert f"refused the call: HTTP {status_code}" in stopped.stderr
    assert "check the API key in environment variable CSRO_TEST_KEY" in stopped.stderr
    assert "sk-test-flaky" not in stopped.stderr
    s = status(tmp_path / "run")
    assert s["llm"]["calls"] == 0 and s["stopped_by"] == "provider" and not s["done"]


def _discover_config(tmp_path, url: str) -> str:
    path = tmp_path / "discover.yaml"
    path.write_text(yaml.safe_dump({
        "kind": "discover", "target": "cfr", "train_games": "kuhn_2p", "test_games": "kuhn_3p", "budget": 4,
        "iterations": 40, "evolve": {"diff_ratio": 1.0}, "llm": {"provider": "openai", "base_url": url, **LLM}}))
    return path


def _edit_for(body: dict) -> str:
    """A SEARCH/REPLACE edit of the CFR+ seed chosen by the request alone: one that applies, one that does not."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
    return (QUADRATIC, MISPLACED)[digest[0] % 2]


def _search(directory) -> dict:
    with RunStore.open(directory) as store:
        programs = sorted((p["id"], p["status"], p["source"]) for p in store.programs())
        return {"final": store.final(), "programs": programs, "calls": len(store.llm_calls())}


@pytest.mark.slow
def test_a_discovery_run_stopped_by_a_server_gone_for_good_resumes_to_the_clean_search(tmp_path):
    with FaultServer("openai", _edit_for) as server:
        csro("run", _discover_config(tmp_path, server.url), "--out", tmp_path / "clean")
    clean = _search(tmp_path / "clean")
    assert clean["calls"] == 4 and clean["final"] is not None
    with FaultServer("openai", _edit_for, burst_s=1.0, failures_per_reply=1, gone_after=2) as server:
        stopped = csro("run", _discover_config(tmp_path, server.url), "--out", tmp_path / "run", check=False)
    assert stopped.returncode == 4, stopped.stderr
    assert f"continue with: csro resume {tmp_path / 'run'}" in stopped.stderr.splitlines()[-1]
    s = status(tmp_path / "run")
    assert s["kind"] == "discover" and not s["done"] and s["stopped_by"] == "provider" and s["llm"]["retried"] >= 1
    assert s["llm"]["calls"] == 2 and s["llm"]["errors"] == 0  # no failure was recorded as the model's reply
    with FaultServer("openai", _edit_for, port=server.port) as back:
        csro("resume", tmp_path / "run")
    assert back.answered == 2
    assert _search(tmp_path / "run") == clean


def test_a_provider_that_cannot_answer_stops_a_reproduction_grid_not_just_its_cell(tmp_path, replies):
    from csro import reproduce, runs
    from csro.config import parse_config

    with FaultServer("openai", reply_for) as server:
        url = server.url  # closed on leaving: connections are refused
    config = small_config(replies)
    config["llm"] = {"provider": "openai", "base_url": url, "model": "m-1", "retry_budget_s": 0.5, "backoff_s": 0.05}
    said: list[str] = []
    with pytest.raises(ProviderStopped, match=f"^openai at {url} still failing after"):
        reproduce._run_cell(parse_config(config), tmp_path / "cell", runs.Hooks(), said.append)
    assert said == ["starting", "stopped: the LLM provider cannot answer"]
    assert runs.status(tmp_path / "cell")["stopped_by"] == "provider"
