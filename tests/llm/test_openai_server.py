"""The openai provider against a real OpenAI-compatible server: ``llama_cpp.server`` serving the
default embedded model on 127.0.0.1, started by the test."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest

from csro.config import LLMConfig
from csro.llm import CallKey, LLMClient, LLMRequest, Message, ensure_model, make_provider

pytestmark = [pytest.mark.slow, pytest.mark.integration]

READY_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    port = _free_port()
    log = open(tmp_path_factory.mktemp("server") / "llama_cpp_server.log", "w+b")  # ~200 kB: a pipe would fill
    model = ensure_model("qwen2.5-coder-0.5b")
    process = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model),
                                "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1",
                                "--model_alias", "qwen"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + READY_S
        while True:
            if process.poll() is not None:
                log.seek(0)
                pytest.fail(f"llama_cpp.server exited: {log.read().decode(errors='replace')[-2000:]}")
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready after {READY_S:g} s")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_a_chat_completion_on_a_real_server(server_url):
    provider = make_provider(LLMConfig(provider="openai", model="qwen", base_url=server_url))
    client = LLMClient(provider, timeout_s=120, retries=0)
    request = LLMRequest(CallKey(1, "propose"), (Message("system", "You are a Python expert."),
                                                 Message("user", "Write one Python line that prints hello.")),
                         prefill="print(", max_tokens=24, temperature=0.0)
    reply = client.complete(request)
    client.close()
    assert reply.ok, reply.error
    assert reply.text.strip() and reply.prefill == ""
    assert reply.tokens_in > 20 and 0 < reply.tokens_out <= 24
    assert client.stats()["tokens_out"] == reply.tokens_out
