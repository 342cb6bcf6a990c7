"""The ``anthropic`` provider: Anthropic's Messages API.

POST ``{base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version: 2023-06-01``;
system messages go to ``system``. Prefill is native: the prefill is sent as a trailing
assistant message and the reply continues it. The API refuses a final assistant message
that ends in whitespace, so the prefill is sent right-stripped and the reply's ``prefill``
is that stripped text (the model's continuation supplies the whitespace); temperatures
above the API's maximum of 1 are clamped to 1 (both our interpretation). Grammars are ignored;
attached images become base64 ``image`` blocks.

Prompt caching (``llm.prompt_cache``, on by default): the stable prefix, the system prompt
and the first user message (rules, API and opponents, the same for every call of an oracle
step), ends in a ``cache_control: {"type": "ephemeral"}`` breakpoint, so the repair,
refinement and rewrite calls that continue that chat read it from the cache. The usage's
``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are recorded (``tokens_in``
is their sum with ``input_tokens``) and priced as cached reads and cache writes.
"""

from __future__ import annotations

from typing import Any

from csro.config import LLMConfig
from csro.llm._http import HTTPProvider, key_of, model_of, png_base64, reply_of, split_system
from csro.llm._types import LLMReply, LLMRequest, Message

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
MAX_TEMPERATURE = 1.0


class AnthropicProvider(HTTPProvider):
    """Anthropic's Messages API."""

    name = "anthropic"
    # the Messages API's error types of a rate limit, an overload (HTTP 529) or its own fault
    TRANSIENT = frozenset({"rate_limit_error", "overloaded_error", "api_error", "timeout_error"})

    def __init__(self, model: str, *, key: str, base_url: str | None = None, cache: bool = True,
                 key_env: str | None = None):
        super().__init__(model, base_url or DEFAULT_BASE_URL, {"x-api-key": key, "anthropic-version": API_VERSION},
                         key, key_env)
        self.cache = cache

    @classmethod
    def from_config(cls, llm: LLMConfig, _: object = None) -> "AnthropicProvider":
        env = llm.api_key_env or "ANTHROPIC_API_KEY"
        return cls(model_of(llm), key=key_of(env), base_url=llm.base_url, cache=llm.prompt_cache, key_env=env)

    def build(self, request: LLMRequest) -> tuple[str, dict[str, Any]]:
        system, chat = split_system(list(request.messages))
        messages = [{"role": m.role, "content": _content(m)} for m in chat]
        if self.cache and messages and messages[0]["role"] == "user":
            messages[0]["content"] = _cached(messages[0]["content"])
        prefill = request.prefill.rstrip()
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
        body: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens, "messages": messages,
                                "temperature": min(request.temperature, MAX_TEMPERATURE)}
        if system:
            body["system"] = _cached(system) if self.cache else system
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        return "/v1/messages", body

    def parse(self, request: LLMRequest, data: Any) -> LLMReply:
        text = "".join(block["text"] for block in data["content"] if block.get("type") == "text")
        usage = data.get("usage") or {}
        read, written = usage.get("cache_read_input_tokens") or 0, usage.get("cache_creation_input_tokens") or 0
        return reply_of(self, request, text, (usage.get("input_tokens") or 0) + read + written,
                        usage.get("output_tokens"), prefill=request.prefill.rstrip(), tokens_cached=read,
                        tokens_cache_write=written)


def _cached(content: Any) -> list[dict[str, Any]]:
    """``content`` as blocks whose last one carries the cache breakpoint."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return blocks


def _content(m: Message) -> Any:
    """The text, or a text block and base64 ``image`` blocks when images are attached."""
    if not m.images:
        return m.content
    return [{"type": "text", "text": m.content}] + [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
        for data in png_base64(m.images)]
