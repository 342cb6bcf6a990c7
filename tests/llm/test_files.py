"""The files provider: replies by call ordinal (submission order), never by arrival order."""

from __future__ import annotations

import random
import threading

import pytest

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm import CallKey, LLMClient, make_provider

from ._fakes import request


@pytest.fixture
def folder(tmp_path):
    for name, text in [("b.py", "B"), ("a.txt", "A"), ("c.md", "C"), ("ignored.json", "X")]:
        (tmp_path / name).write_text(text)
    (tmp_path / "sub.py").mkdir()
    return tmp_path


def _provider(path):
    return make_provider(LLMConfig(provider="files", path=str(path)))


def test_replies_are_the_files_sorted_by_name_cycling(folder):
    client = LLMClient(_provider(folder))
    replies = client.complete_many([request(sample=i) for i in range(5)])
    assert [r.text for r in replies] == ["A", "B", "C", "A", "B"]
    assert all(r.ok and r.prefill == "" and r.provider == "files" for r in replies)


def test_the_same_key_gets_the_same_reply_and_unsubmitted_keys_the_next_ordinal(folder):
    provider = _provider(folder)
    assert provider.on_submit(CallKey(1, "propose")) == 0
    assert provider.on_submit(CallKey(1, "propose")) == 0
    assert provider.complete(request(2), 1.0).text == "B"  # never submitted: ordinal 1
    assert provider.complete(request(1), 1.0).text == "A"


def test_a_shuffled_thread_schedule_gives_the_same_mapping(folder):
    requests = [request(sample=i) for i in range(9)]

    def mapping(seed):
        provider = _provider(folder)
        original = provider.complete
        rng = random.Random(seed)
        waits = {r.key: rng.random() * 0.05 for r in requests}

        def jittered(req, timeout_s):
            threading.Event().wait(waits[req.key])
            return original(req, timeout_s)

        provider.complete = jittered
        return {r.key: r.text for r in LLMClient(provider, concurrency=9).complete_many(requests)}

    first = mapping(0)
    assert [first[r.key] for r in requests] == list("ABCABCABC")
    assert mapping(1) == first == mapping(2)


def test_a_resumed_run_assigns_the_same_ordinals(folder):
    # The first run made calls 0 and 1; a resumed run replays them from its store and asks
    # for call 2: it must get the third file, not the first.
    requests = [request(sample=i) for i in range(3)]
    first = LLMClient(_provider(folder)).complete_many(requests[:2])
    store = {r.key: r for r in first}
    resumed = LLMClient(_provider(folder), recorded=store.get).complete_many(requests)
    assert [r.text for r in resumed] == ["A", "B", "C"]


@pytest.mark.parametrize("make_path, message", [
    (lambda tmp: None, "llm.path: the files provider needs a folder of replies"),
    (lambda tmp: tmp / "missing", "llm.path: the files provider needs a folder of replies, "),
    (lambda tmp: tmp, "llm.path: the folder .* holds no reply files"),
])
def test_a_missing_or_empty_folder_is_a_config_error(tmp_path, make_path, message):
    path = make_path(tmp_path)
    with pytest.raises(ConfigError, match=message):
        make_provider(LLMConfig(provider="files", path=None if path is None else str(path)))
