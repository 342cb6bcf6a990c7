"""The ``openai`` provider: any server speaking the OpenAI chat-completions API (OpenAI itself,
``llama_cpp.server``, vLLM, ...). Hennes et al. (arXiv 2603.10098) used hosted models; this
is how csro plugs one in.

POST ``{base_url}/chat/completions`` with model, messages, max_tokens, temperature, seed and
stop, and a Bearer key when one is configured (local servers need none). The API cannot
prefill the assistant's turn, so a prefill becomes an instruction to start the reply with
it, and the reply's ``prefill`` is empty: its text is the whole reply (our interpretation).
Grammars are ignored; attached images become ``image_url`` parts.

Prompt caching: OpenAI caches long prompt prefixes by itself; the oracles keep the stable
part (system message, rules, API, opponents) first and the varying part (feedback, errors,
the prefill instruction) last, and the cached prompt tokens are read from
``usage.prompt_tokens_details.cached_tokens`` (priced as cached input).
"""

from __future__ import annotations

from typing import Any

from csro.config import LLMConfig
from csro.llm._http import HTTPProvider, key_of, model_of, png_base64, prefill_as_instruction, reply_of
from csro.llm._types import LLMReply, LLMRequest, Message

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIProvider(HTTPProvider):
    """Chat completions on an OpenAI-compatible server."""

    name = "openai"
    # OpenAI's error types and codes for a rate limit, an overload or its own fault (vLLM and
    # llama.cpp's server use the same shapes)
    TRANSIENT = frozenset({"rate_limit_exceeded", "rate_limit_error", "server_error", "overloaded", "overloaded_error",
                           "service_unavailable", "timeout"})
    PERMANENT = frozenset({"insufficient_quota"})  # a 429 that only billing ends

    def __init__(self, model: str, *, base_url: str | None = None, key: str | None = None,
                 key_env: str | None = None):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        super().__init__(model, base_url or DEFAULT_BASE_URL, headers, key, key_env)

    @classmethod
    def from_config(cls, llm: LLMConfig, _: object = None) -> "OpenAIProvider":
        # A local server (base_url set) needs no key unless one is named; OpenAI itself does.
        env = llm.api_key_env or (None if llm.base_url else "OPENAI_API_KEY")
        return cls(model_of(llm), base_url=llm.base_url, key=key_of(env) if env else None, key_env=env)

    @classmethod
    def takes_images(cls, llm: LLMConfig) -> bool:
        """OpenAI itself does; an OpenAI-compatible local server (``base_url``) may not."""
        return not llm.base_url

    def build(self, request: LLMRequest) -> tuple[str, dict[str, Any]]:
        messages = [{"role": m.role, "content": _content(m)}
                    for m in prefill_as_instruction(request.messages, request.prefill)]
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": request.max_tokens,
                                "temperature": request.temperature, "seed": request.seed}
        if request.stop:
            body["stop"] = list(request.stop)
        return "/chat/completions", body

    def parse(self, request: LLMRequest, data: Any) -> LLMReply:
        usage = data.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        return reply_of(self, request, data["choices"][0]["message"]["content"], usage.get("prompt_tokens"),
                        usage.get("completion_tokens"), tokens_cached=cached)


def _content(m: Message) -> Any:
    """The text, or text and ``image_url`` parts (PNG data URLs) when images are attached."""
    if not m.images:
        return m.content
    return [{"type": "text", "text": m.content}] + [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}} for data in png_base64(m.images)]
