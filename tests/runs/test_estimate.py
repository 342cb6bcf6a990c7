"""``csro run CONFIG --estimate``: no call made, the first prompt counted as the run counts
it, and the expected tokens within 30% of real files runs (the acceptance of issue 18; the
embedded run's figure is measured by bench/estimate_accuracy.py, see docs/cost.md)."""

from __future__ import annotations

import hashlib
import pathlib
import re

import pytest

from csro import runs
from csro.config import load_config, parse_config
from csro.cost import estimate_run
from csro.games import load_game
from csro.registry import ORACLES
from csro.store import RunStore
from run_helpers import csro, small_config, write_config
from tests.llm._server import Answer, ScriptedServer


def _demo_like(replies) -> dict:
    """A demo-sized linear refinement oracle (M = 2, one repair), the files provider."""
    config = small_config(replies)
    config["oracle"] = {"kind": "linear_refinement", "max_refinements": 2, "samples": 1, "max_repairs": 1,
                        "prompt": "plain", "max_tokens": 512, "context": {"opponents": "code", "k": 3}}
    return config


@pytest.mark.slow
def test_the_expected_tokens_are_within_30_percent_of_files_runs(tmp_path, replies):
    """``expected`` against the mean of ten runs: one run refines 0 to 2 times an iteration as
    its matches fall (3 to 8 calls, 2,939 to 8,525 tokens), which no estimate can know
    beforehand. Each run's secret (the root of its match seeds, issue 37) is fixed here, so the
    test is the same every time: with secrets drawn anew the mean of five runs spread from
    0.69 to 1.38 times the expected tokens; over twenty fixed ones it was 5,514 against 5,640."""
    estimate = estimate_run(parse_config(_demo_like(replies)))
    tokens = {name: s["tokens_in"] + s["tokens_out"] for name, s in estimate.scenarios.items()}
    actual = []
    for k in range(10):
        config = parse_config({**_demo_like(replies), "seed": 1 + k % 5})
        secret = hashlib.sha256(b"estimate %d" % k).hexdigest()[:32]
        RunStore.create(tmp_path / f"run{k}", config.to_dict(), secret).close()
        runs.resume(tmp_path / f"run{k}")
        with RunStore.open(tmp_path / f"run{k}") as store:
            calls = store.llm_calls()
        actual.append(sum(r.tokens_in + r.tokens_out for _, r in calls))
        assert tokens["low"] <= actual[-1] <= tokens["high"]
        assert estimate.first_prompt_tokens == calls[0][1].tokens_in  # the first prompt, rendered for real
    assert 0.7 <= tokens["expected"] / (sum(actual) / len(actual)) <= 1.3, (tokens, actual)


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


def test_three_player_kuhn_costs_three_times_two_player_kuhn():
    """The loop makes one oracle call per player per iteration, so the calls triple."""
    config = load_config(pathlib.Path(__file__).parents[2] / "configs" / "kuhn3.yaml", ["llm.provider=openai", "llm.model=gpt-4o-mini"])
    three = estimate_run(config).scenarios
    two = estimate_run(config.model_copy(update={"game": "kuhn_poker"})).scenarios
    assert three["high"]["calls"] == 3 * two["high"]["calls"] and three["low"]["calls"] == 3 * two["low"]["calls"]


# grammar_search refuses a game without a strict grammar (Kuhn has none) and makes no LLM call:
# its zero estimate and its call count are tests/evolve/test_grammar_search.py's.
# Every kind on Kuhn; with three players, the kind whose calls branch most (refinement rounds
# on top of samples and repairs), one call per player per iteration: that the estimate triples
# is test_three_player_kuhn_costs_three_times_two_player_kuhn's.
LLM_KINDS = [kind for kind in ORACLES.names() if kind != "grammar_search"]
KINDS = [("kuhn_poker", kind) for kind in LLM_KINDS] + [("kuhn_poker(players=3)", "linear_refinement")]


@pytest.mark.parametrize("game, kind", KINDS)
@pytest.mark.slow
def test_high_bounds_the_calls_of_a_real_run(tmp_path, game, kind):
    """A files run whose replies alternate a valid policy and a reply with no program, so that
    repairs, the grammar fallback, refinement rounds and descriptions all happen; the final
    best response is on. The files provider makes exactly the calls the loop asks for. The
    calls do not depend on sigma: the uniform meta-solver (PRD took 12 of a run's 13 s)."""
    folder = tmp_path / "replies"
    folder.mkdir()
    (folder / "a.py").write_text(f"```python\n{load_game(game).example_policy}```\n")
    (folder / "b.md").write_text("I would rather describe a strategy than write one.\n")
    config = parse_config({
        "game": game, "iterations": 2, "seed": 1, "matches_per_cell": 2, "meta_solver": "uniform",
        "oracle": {"kind": kind, "samples": 2, "max_repairs": 1, "max_refinements": 2, "max_tokens": 256,
                   "context": {"opponents": "both"},
                   "evolve": {"islands": 1, "population_size": 2, "generations": 2, "repairs": 1}},
        "llm": {"provider": "files", "path": str(folder)},
        "evaluation": {"br_estimate": True, "matches_per_opponent": 2, "every_iteration": False},
        "execution": {"processes": 1}})
    high = estimate_run(config).scenarios["high"]["calls"]
    runs.start(config, tmp_path / "run")
    with RunStore.open(tmp_path / "run") as store:
        calls = len(store.llm_calls())
    if kind == "no_model":  # the baseline makes no call, and its estimate says so
        assert calls == high == 0
    else:
        assert 0 < calls <= high, (calls, high)
