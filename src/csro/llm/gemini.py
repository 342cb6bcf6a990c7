"""The ``gemini`` provider: Google's Gemini API (``generateContent``).

POST ``{base_url}/v1beta/models/{model}:generateContent`` with the key in the
``x-goog-api-key`` header; the chat becomes ``contents`` (roles ``user`` and ``model``) and
``systemInstruction``, the sampling settings ``generationConfig``. A prefill becomes an
instruction, as for ``openai`` (our interpretation); grammars are ignored;
attached images become ``inline_data`` parts.
"""

from __future__ import annotations

from typing import Any

from csro.llm._http import HTTPProvider, png_base64, prefill_as_instruction, reply_of, split_system
from csro.llm._types import LLMReply, LLMRequest

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
_ROLES = {"user": "user", "assistant": "model"}


class GeminiProvider(HTTPProvider):
    """Gemini's generateContent."""

    name = "gemini"

    def __init__(self, model: str, *, key: str, base_url: str | None = None):
        super().__init__(model, base_url or DEFAULT_BASE_URL, {"x-goog-api-key": key}, key)

    def build(self, request: LLMRequest) -> tuple[str, dict[str, Any]]:
        system, chat = split_system(prefill_as_instruction(request.messages, request.prefill))
        config: dict[str, Any] = {"temperature": request.temperature, "maxOutputTokens": request.max_tokens,
                                  "seed": request.seed}
        if request.stop:
            config["stopSequences"] = list(request.stop)
        body: dict[str, Any] = {"contents": [{"role": _ROLES[m.role], "parts": [{"text": m.content}] + [
            {"inline_data": {"mime_type": "image/png", "data": data}} for data in png_base64(m.images)]} for m in chat],
                                "generationConfig": config}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return f"/v1beta/models/{self.model}:generateContent", body

    def parse(self, request: LLMRequest, data: Any) -> LLMReply:
        parts = data["candidates"][0]["content"]["parts"]
        usage = data.get("usageMetadata") or {}
        return reply_of(self, request, "".join(p["text"] for p in parts if "text" in p),
                        usage.get("promptTokenCount"), usage.get("candidatesTokenCount"))
