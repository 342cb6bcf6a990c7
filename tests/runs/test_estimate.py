"""``csro run CONFIG --estimate``: no call made, the first prompt counted as the run counts
it, and the expected tokens within 30% of a real files run (the acceptance of issue 18; the
embedded run's figure is measured by bench/estimate_accuracy.py, see docs/cost.md)."""

from __future__ import annotations

import re

from csro import runs
from csro.config import parse_config
from csro.llm.estimate import estimate_run
from csro.store import RunStore
from run_helpers import csro, small_config, write_config
from tests.llm._server import Answer, ScriptedServer


def _demo_like(replies) -> dict:
    """A demo-sized linear refinement oracle (M = 2, one repair), the files provider."""
    config = small_config(replies)
    config["oracle"] = {"kind": "linear_refinement", "max_refinements": 2, "samples": 1, "max_repairs": 1,
                        "prompt": "plain", "max_tokens": 512, "context": {"opponents": "code", "k": 3}}
    return config


def test_the_expected_tokens_are_within_30_percent_of_a_files_run(tmp_path, replies):
    config = parse_config(_demo_like(replies))
    estimate = estimate_run(config)
    runs.start(config, tmp_path / "run")
    with RunStore.open(tmp_path / "run") as store:
        calls = store.llm_calls()
    actual = sum(r.tokens_in + r.tokens_out for _, r in calls)
    tokens = {name: s["tokens_in"] + s["tokens_out"] for name, s in estimate.scenarios.items()}
    assert tokens["low"] <= actual <= tokens["high"]
    assert 0.7 <= tokens["expected"] / actual <= 1.3, (tokens, actual)
    assert estimate.first_prompt_tokens == calls[0][1].tokens_in  # the first prompt, rendered for real


def test_the_estimate_makes_no_call_and_prices_a_hosted_model(tmp_path, replies, monkeypatch):
    monkeypatch.setenv("CSRO_TEST_KEY", "sk-test-estimate")
    config = _demo_like(replies)
    with ScriptedServer(Answer({})) as server:
        config["llm"] = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "base_url": server.url,
                         "api_key_env": "CSRO_TEST_KEY"}
        done = csro("run", write_config(tmp_path / "c.yaml", config), "--estimate")
    assert server.seen == [] and not (tmp_path / "run").exists()
    assert "no LLM call was made" in done.stdout and "price: $3/M input, $15/M output" in done.stdout
    assert re.search(r"counted with csro's approximation \(4.0 characters per token\)", done.stdout)
    rows = {m[0]: (int(m[1]), int(m[2]), float(m[3])) for m in
            re.findall(r"^(low|expected|high) +(\d+) +\d+ +\d+ +(\d+) +\$([\d.]+)$", done.stdout, re.M)}
    assert set(rows) == {"low", "expected", "high"}
    assert rows["low"] < rows["expected"] < rows["high"]
    assert rows["high"][0] == 3 * (1 + 1 + 1) * 3  # K x (propose, repair, fallback) x (1 + M rounds)


def test_an_unknown_price_is_unknown_and_run_needs_out_or_estimate(tmp_path, replies):
    config = _demo_like(replies)
    config["llm"] = {"provider": "openai", "model": "local-model", "base_url": "http://127.0.0.1:9"}
    path = write_config(tmp_path / "c.yaml", config)
    done = csro("run", path, "--estimate")
    assert "price: unknown (give llm.prices)" in done.stdout and "unknown" in done.stdout.splitlines()[5]
    missing = csro("run", path, check=False)
    assert missing.returncode == 2
    assert missing.stderr.strip() == "error: --out: csro run needs the new run directory (or --estimate)"
