"""``llm.budget`` in whole runs: a run stops at its cap before the call that could pass it,
records and shows why, and ``csro resume DIR --set llm.budget...`` ends like a run that never
stopped (population hashes, sigma and final metrics equal). The files provider through the
real CLI; each hosted wire format against a scripted local server (no hosted model)."""

from __future__ import annotations

import pytest

from csro import runs
from csro.config import parse_config
from csro.errors import BudgetExhausted, ConfigError
from csro.store import RunStore
from run_helpers import BEAT_LAST, FREQUENCY, SECOND_ORDER, csro, same_run, small_config, status, write_config
from tests.llm._server import Answer, ScriptedServer


def _outcome(s: dict) -> dict:
    return {"population": [m["sha256"] for m in s["population"]], "sigma": s["sigma"], "final": s["final"]}


@pytest.mark.slow
def test_a_calls_budget_stops_the_run_and_resume_with_a_larger_one_ends_like_an_uninterrupted_run(tmp_path, replies):
    config = small_config(replies)
    capped = {**config, "llm": {**config["llm"], "budget": {"calls": 2}}}
    directory = tmp_path / "capped"
    stopped = csro("run", write_config(tmp_path / "capped.yaml", capped), "--out", directory, check=False)
    assert stopped.returncode == 3, stopped.stderr
    assert "stopped: llm.budget.calls = 2 reached: 2 calls spent" in stopped.stderr
    assert f"csro resume {directory} --set llm.budget.calls=..." in stopped.stderr
    s = status(directory)
    assert not s["done"] and s["iteration"] == 2 and s["llm"]["calls"] == 2
    assert s["stopped"].startswith("llm.budget.calls = 2 reached")
    assert "stopped by the LLM budget: llm.budget.calls = 2 reached" in (directory / "report.html").read_text()
    shown = " ".join(csro("status", directory).stdout.split())  # Rich wraps at 80 columns
    assert "stopped by the LLM budget" in shown and "LLM: 2 calls" in shown

    refused = csro("resume", directory, "--set", "iterations=5", check=False)
    assert refused.returncode == 2
    assert refused.stderr.strip() == ("error: --set iterations: only llm.budget, llm.retry_budget_s, llm.retries, "
                                      "llm.backoff_s may change when resuming "
                                      "(a run's other settings are fixed by what it has stored)")
    invalid = csro("resume", directory, "--set", "llm.budget.calls=-1", check=False)
    assert invalid.returncode == 2 and "llm.budget.calls" in invalid.stderr

    again = csro("resume", directory, "--set", "llm.budget.calls=3", check=False)
    assert again.returncode == 0, again.stderr
    s = status(directory)
    assert s["done"] and s["stopped"] is None and s["llm"]["budget"]["calls"] == 3
    whole = same_run(directory, tmp_path / "whole", llm=config["llm"])  # its secret, no budget, at once
    csro("resume", whole)
    assert _outcome(s) == _outcome(status(whole))


def test_a_token_budget_never_passes_its_cap(tmp_path, replies):
    config = small_config(replies)
    config["llm"] = {**config["llm"], "budget": {"tokens": 2500}}
    config["oracle"] = {**config["oracle"], "max_tokens": 400}
    with pytest.raises(BudgetExhausted, match=r"^llm.budget.tokens = 2500 reached: \d+ tokens spent, the next 1 call"):
        runs.start(parse_config(config), tmp_path / "run")
    s = runs.status(tmp_path / "run")
    total = s["llm"]["usage"]["total"]
    assert 1 <= total["calls"] < 3 and 0 < total["tokens_in"] + total["tokens_out"] <= 2500


def test_a_role_budget_stops_at_the_role_cap(tmp_path, replies):
    config = small_config(replies)
    config["llm"] = {**config["llm"], "budget": {"roles": {"proposal": {"calls": 1}}}}
    with pytest.raises(BudgetExhausted, match=r"^llm.budget.roles.proposal.calls = 1 reached"):
        runs.start(parse_config(config), tmp_path / "run")
    assert runs.status(tmp_path / "run")["llm"]["usage"]["roles"]["proposal"]["calls"] == 1


def test_a_dollar_budget_needs_a_known_price(tmp_path, replies):
    config = small_config(replies)
    with ScriptedServer(Answer({})) as server:
        config["llm"] = {"provider": "openai", "model": "my-local-model", "base_url": server.url,
                         "budget": {"usd": 1.0}}
        with pytest.raises(ConfigError, match="^llm.budget.usd: the model's price is unknown; give it in llm.prices$"):
            runs.start(parse_config(config), tmp_path / "run")
    assert server.seen == []


def _reply(kind: str, source: str) -> dict:
    text = f"```python\n{source}```"
    if kind == "openai":
        return {"choices": [{"message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 150}}
    if kind == "gemini":
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}],
                "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 150}}
    return {"content": [{"type": "text", "text": text}], "usage": {"input_tokens": 900, "output_tokens": 150}}


@pytest.mark.parametrize("kind", ["openai", "gemini", "anthropic"])
@pytest.mark.slow
def test_request_shape_a_dollar_budget_stops_each_wire_format_at_the_cap_and_resume_ends_alike(kind, tmp_path,
                                                                                               monkeypatch, replies):
    monkeypatch.setenv("CSRO_TEST_KEY", "sk-test-budget")
    answers = [Answer(_reply(kind, source)) for source in (FREQUENCY, BEAT_LAST, SECOND_ORDER)]
    config = small_config(replies)
    config["oracle"] = {**config["oracle"], "prompt": "plain", "max_tokens": 300}
    llm = {"provider": kind, "model": "m-1", "api_key_env": "CSRO_TEST_KEY", "retries": 0,
           "prices": {"input": 100.0, "output": 400.0}}  # $/M: a call costs 0.09 + 0.06 = $0.15
    with ScriptedServer(*answers[:2]) as server:
        config["llm"] = {**llm, "base_url": server.url, "budget": {"usd": 0.4}}
        with pytest.raises(BudgetExhausted, match=r"^llm.budget.usd = 0.4 reached: 0.3 USD spent"):
            runs.start(parse_config(config), tmp_path / "capped")
    assert len(server.seen) == 2  # the third call was never sent
    s = runs.status(tmp_path / "capped")
    assert s["llm"]["usage"]["total"]["cost_usd"] == pytest.approx(0.3) and s["stopped"]
    with RunStore.open(tmp_path / "capped") as store:
        assert [r.cost_usd for _, r in store.llm_calls()] == [pytest.approx(0.15)] * 2
    with ScriptedServer(answers[2]) as server:  # answers as the whole run's third call; a new port, so the
        # recorded base_url is pointed at it (base_url is not a field resume --set may change)
        with RunStore.open(tmp_path / "capped") as store:
            store.set_config({**store.config(), "llm": {**store.config()["llm"], "base_url": server.url}})
            runs.change_budget(store, ["llm.budget.usd=1"])
        runs.resume(tmp_path / "capped")
    assert len(server.seen) == 1  # the two recorded calls were replayed, not sent
    with ScriptedServer(*answers) as server:  # the same run (its secret), uninterrupted, without a budget
        runs.resume(same_run(tmp_path / "capped", tmp_path / "whole", llm={**llm, "base_url": server.url}))
    resumed, whole = runs.status(tmp_path / "capped"), runs.status(tmp_path / "whole")
    assert resumed["done"] and _outcome(resumed) == _outcome(whole)
    assert resumed["llm"]["usage"]["total"]["cost_usd"] == pytest.approx(0.45)
