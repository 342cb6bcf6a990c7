"""Key frames attached to the rewrite prompt: the request shapes of the three hosted providers,
and a whole round against a local scripted OpenAI-compatible server (no hosted model)."""

from __future__ import annotations

import base64
import json

import pytest

from aor_helpers import csro, files_config
from aor_helpers import REPLIES
from csro.llm import CallKey, LLMRequest, Message
from csro.llm.anthropic import AnthropicProvider
from csro.llm.gemini import GeminiProvider
from csro.llm.openai import OpenAIProvider
from csro.robots import AorStore, parse_aor_config
from llm._server import Answer, ScriptedServer

PNG = b"\x89PNG\r\n\x1a\n-not-a-real-image"
B64 = base64.b64encode(PNG).decode()
REQUEST = LLMRequest(CallKey(1, "rewrite"), (Message("system", "sys"), Message("user", "look", (PNG, PNG))))


def test_images_become_each_providers_image_parts():
    _, body = OpenAIProvider("m", key="k").build(REQUEST)
    assert body["messages"][1]["content"] == [{"type": "text", "text": "look"}] + [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}] * 2
    assert body["messages"][0]["content"] == "sys"  # no images: the plain string, as before
    _, body = AnthropicProvider("m", key="k").build(REQUEST)
    assert body["messages"][0]["content"][1] == {"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": B64}}
    _, body = GeminiProvider("m", key="k").build(REQUEST)
    assert body["contents"][0]["parts"] == [{"text": "look"}] + [{"inline_data": {"mime_type": "image/png",
                                                                                   "data": B64}}] * 2


def test_auto_sends_images_to_hosted_providers_only():
    def send(**llm):
        return parse_aor_config({"llm": llm}).send_images
    assert send(provider="anthropic") and send(provider="gemini") and send(provider="openai", model="x")
    assert not send(provider="openai", model="x", base_url="http://127.0.0.1:1")  # a local server
    assert not send(provider="embedded") and not send(provider="files", path="x")
    assert parse_aor_config({"images": "on", "llm": {"provider": "embedded"}}).send_images


@pytest.mark.slow
def test_a_rewrite_round_sends_the_parents_key_frames(tmp_path):
    reply = (REPLIES / "02_repair.md").read_text()
    answer = {"choices": [{"message": {"role": "assistant", "content": reply}}],
              "usage": {"prompt_tokens": 900, "completion_tokens": 300}}
    broken = tmp_path / "broken.py"
    broken.write_text((REPLIES / "00_propose.md").read_text().split("```python\n")[1].split("```")[0])
    with ScriptedServer(Answer(answer)) as server:
        config = files_config(tmp_path, rounds=1, initial_controller=str(broken), images="on",
                              llm={"provider": "openai", "model": "vision-1", "base_url": server.url})
        csro("run", config, "--out", tmp_path / "run")
    seen, = server.seen
    user = seen.body["messages"][-1]["content"]
    text, images = user[0]["text"], [part["image_url"]["url"] for part in user[1:]]
    assert "ATTACHED IMAGES, in order" in text and "episode 0 step 0 (phase approach)" in text
    assert len(images) == 5 and all(u.startswith("data:image/png;base64,") for u in images)
    with AorStore.open(tmp_path / "run") as store:
        stored = [f.png for f in store.frames("c0", 0)]
        assert [base64.b64decode(u.split(",", 1)[1]) for u in images] == stored
        assert store.final()["best"] == "c1"
        _, recorded = store.llm_calls()[0]
        assert recorded.provider == "openai" and recorded.model == "vision-1"
    assert json.dumps(seen.body).count("base64,") == 5  # the frames of one episode only
