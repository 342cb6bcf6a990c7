"""``oracle.kind: evolve`` in ``csro run``: the files provider end to end, the embedded model for real."""

import pytest

from csro.store import RunStore

from tests.runs.run_helpers import FREQUENCY, csro, small_config, write_config

DEEPER = """<<<<<<< SEARCH
        return self.BEATS[self.predicted]
=======
        return self.BEATS[self.BEATS[self.predicted]]
>>>>>>> REPLACE
"""


PAPER = """class Agent:
    def act(self, observation: dict) -> str:
        return "PAPER"
"""


def evolve_config(tmp_path, **evolve):
    folder = tmp_path / "replies"
    folder.mkdir()
    (folder / "a.txt").write_text(DEEPER)
    (folder / "b.py").write_text(f"```python\n{FREQUENCY}```\n")
    (folder / "c.txt").write_text("<<<<<<< SEARCH\nnot in any program\n=======\nx = 1\n>>>>>>> REPLACE\n")
    (folder / "d.txt").write_text("Sorry, I will not write code.")
    (folder / "e.py").write_text(f"```python\n{PAPER}```\n")  # beats the seed against rockbot
    config = small_config(folder, iterations=2, initial_policy="builtin:rockbot")  # p1 beats it: sigma_1 = p1
    config["oracle"] = {"kind": "evolve", "prompt": "plain",
                        "evolve": {"islands": 2, "population_size": 2, "generations": 2, **evolve}}
    return write_config(tmp_path / "config.yaml", config)


@pytest.mark.slow
def test_evolve_run_with_files_stores_programs_and_reports_the_search(tmp_path):
    done = csro("run", evolve_config(tmp_path), "--out", tmp_path / "run")
    assert "generation 1" in done.stderr + done.stdout
    with RunStore.open(tmp_path / "run") as store:
        programs = store.programs()
        policies = store.policies()
        events = store.events()
        sigma_1 = next(s for s in store.sigmas() if s.iteration == 1)
    statuses = {p["status"] for p in programs}
    assert {"seed", "apply_failed", "no_code"} <= statuses and statuses & {"ok", "not_promising"}
    assert {p["iteration"] for p in programs} == {1, 2}
    assert [p.oracle for p in policies] == ["initial", "evolve", "evolve"]
    # the archive carried into iteration 2: its elites play only the new member p1, if sigma_1 weighs it
    rescored = next(e["data"] for e in events if e["kind"] == "evolve_rescored" and e["iteration"] == 2)
    new_in_support = int(dict(zip(sigma_1.names, sigma_1.sigma)).get("p1", 0) > 0)
    assert new_in_support and rescored["elites"] > 0 and rescored["cells_simulated"] == rescored["elites"]
    html = (tmp_path / "run" / "report.html").read_text()
    for text in ("Evolutionary search", "Islands", "Lineage of the best program", "Re-scoring when sigma changed",
                 "Fitness of each program"):
        assert text in html


@pytest.mark.slow
@pytest.mark.integration
def test_evolve_run_with_the_embedded_model(tmp_path):
    """One PSRO iteration, one generation of two real SmolLM2-135M calls (each a diff or a grammar
    rewrite, as ``diff_ratio`` draws them); short replies: the mechanics, not the programs."""
    config = small_config(tmp_path, iterations=1)
    config["llm"] = {"provider": "embedded", "model": "smollm2-135m"}  # the mechanics: the smallest model (issue 39)
    config["oracle"] = {"kind": "evolve", "max_tokens": 128, "context": {"k": 1},
                        "evolve": {"islands": 1, "population_size": 2, "generations": 1, "diff_ratio": 0.5}}
    done = csro("run", write_config(tmp_path / "config.yaml", config), "--out", tmp_path / "run")
    assert "generation 0" in done.stderr + done.stdout
    with RunStore.open(tmp_path / "run") as store:
        calls = store.llm_calls()
        programs = store.programs()
        policies = store.policies()
    assert len(calls) == 2 and all(r.provider == "embedded" and not r.error for _, r in calls)
    made = [p for p in programs if p["mutation"] in ("diff", "rewrite")]
    assert len(made) == 2 and all(p["call_key"] for p in made)
    assert len(policies) == 2 and policies[1].oracle == "evolve"


def _diff_reply(provider: str) -> dict:
    """One scripted reply body in the provider's wire format, holding the DEEPER edit."""
    if provider == "openai":
        return {"choices": [{"message": {"role": "assistant", "content": DEEPER}}],
                "usage": {"prompt_tokens": 300, "completion_tokens": 60}}
    if provider == "gemini":
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": DEEPER}]}}],
                "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": 60}}
    return {"content": [{"type": "text", "text": DEEPER}], "usage": {"input_tokens": 300, "output_tokens": 60}}


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
@pytest.mark.slow
def test_evolve_run_with_each_hosted_provider_shape(provider, tmp_path, monkeypatch):
    """The hosted providers against a scripted local HTTP server, then a replay of that run."""
    from csro import runs
    from csro.config import parse_config
    from tests.llm._server import Answer, ScriptedServer

    monkeypatch.setenv("CSRO_TEST_KEY", "sk-test-not-a-real-key")
    config = small_config(tmp_path, iterations=1)
    config["oracle"] = {"kind": "evolve", "prompt": "plain",
                        "evolve": {"islands": 1, "population_size": 2, "generations": 1, "diff_ratio": 1.0}}
    with ScriptedServer(Answer(_diff_reply(provider))) as server:
        config["llm"] = {"provider": provider, "model": "m-1", "base_url": server.url, "api_key_env": "CSRO_TEST_KEY",
                         "retries": 0}
        runs.start(parse_config(config), tmp_path / "run")
    # gemini also asks to cache the shared task prefix (refused here: the scripted answer has no name)
    assert len([s for s in server.seen if s.path != "/v1beta/cachedContents"]) == 2
    with RunStore.open(tmp_path / "run") as store:
        made = [p for p in store.programs() if p["mutation"] == "diff"]
        policies = store.policies()
    assert len(made) == 2 and {p["status"] for p in made} <= {"ok", "not_promising"}
    assert "self.BEATS[self.BEATS[self.predicted]]" in made[0]["source"]
    assert policies[-1].oracle == "evolve"
    assert "sk-test-not-a-real-key" not in (tmp_path / "run" / "run.db").read_bytes().decode("latin-1")
    config["llm"] = {"provider": "replay", "path": str(tmp_path / "run")}
    runs.start(parse_config(config), tmp_path / "replayed")
    with RunStore.open(tmp_path / "replayed") as replayed, RunStore.open(tmp_path / "run") as original:
        assert [p["source"] for p in replayed.programs()] == [p["source"] for p in original.programs()]
