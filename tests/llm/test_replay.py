"""The replay provider: an earlier run's recorded replies, errors included, by call key."""

from __future__ import annotations

import dataclasses

import pytest

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm import LLMClient, LLMReply, make_provider
from csro.recording import run_client
from csro.store import RunStore

from ._fakes import request


@pytest.fixture
def earlier_run(tmp_path):
    """A run store holding one good and one failed call."""
    directory = tmp_path / "earlier"
    store = RunStore.create(directory, config={"game": "rrps"})
    good = LLMReply(request(1).key, "class Agent: ...", "embedded", "qwen", 100, 20, 1.5, 1, None, "```python\n")
    bad = LLMReply(request(2).key, "", "openai", "gpt", attempts=4, error="HTTP 503 after 4 attempts: busy")
    store.add_llm_call(request(1), good)
    store.add_llm_call(request(2), bad)
    store.close()
    return directory, good, bad


def test_recorded_replies_and_errors_come_back_unchanged(earlier_run):
    directory, good, bad = earlier_run
    with RunStore.open(directory) as store:
        client = LLMClient(make_provider(LLMConfig(provider="replay", path=str(directory)), replay_lookup=store.llm_call))
        replies = client.complete_many([request(2), request(1)])
        client.close()
    # Only the attempt count, latency and cost (0: the calls were paid for by the earlier run) are this client's own.
    assert replies[1] == dataclasses.replace(good, latency_s=replies[1].latency_s, cost_usd=0.0)
    assert replies[0] == dataclasses.replace(bad, attempts=1, latency_s=replies[0].latency_s, cost_usd=0.0)
    assert replies[0].full_text == "" and replies[1].full_text == "```python\nclass Agent: ..."


def test_a_call_the_earlier_run_never_made_is_a_non_retryable_error(earlier_run):
    directory, _, _ = earlier_run
    with RunStore.open(directory) as store:
        client = LLMClient(make_provider(LLMConfig(provider="replay", path=str(directory)),
                                         replay_lookup=store.llm_call), retries=3, sleep=pytest.fail)
        reply = client.complete(request(3, "refine-2"))
    assert reply.error == "failed after 1 attempt: no recorded reply for call 3/refine-2/0"


def test_a_replayed_run_recorded_in_a_new_store_matches_by_key(earlier_run, tmp_path):
    directory, good, _ = earlier_run
    with RunStore.create(tmp_path / "again", config={"game": "rrps"}) as new:
        with run_client(LLMConfig(provider="replay", path=str(directory)), new) as client:
            client.complete(request(1))
        assert new.llm_call(request(1).key).text == good.text


def test_replay_without_a_run_is_a_config_error(tmp_path):
    with RunStore.create(tmp_path / "new", config={"game": "rrps"}) as new:
        with pytest.raises(ConfigError, match="llm.path: the replay provider needs the directory of an earlier run"):
            with run_client(LLMConfig(provider="replay"), new):
                pass
        with pytest.raises(ConfigError, match="llm.path: no run at"):
            with run_client(LLMConfig(provider="replay", path=str(tmp_path)), new):
                pass

