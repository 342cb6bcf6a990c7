"""The ``gemini`` provider: Google's Gemini API (``generateContent``).

POST ``{base_url}/v1beta/models/{model}:generateContent`` with the key in the
``x-goog-api-key`` header; the chat becomes ``contents`` (roles ``user`` and ``model``) and
``systemInstruction``, the sampling settings ``generationConfig``. A prefill becomes an
instruction, as for ``openai`` (our interpretation); grammars are ignored;
attached images become ``inline_data`` parts.

Context caching (``llm.prompt_cache``, on by default; our use of the API's explicit cache):
a chat that continues past its first user message (repairs, refinements, rewrites) has a
stable prefix, the system instruction and that first message (rules, API, opponents). The
prefix is stored once with POST ``/v1beta/cachedContents`` (``ttl`` ``CACHE_TTL``) and each
such call names it in ``cachedContent``, sending only the rest of the chat. A prefix the API
refuses to cache (a 4xx, e.g. below its minimum size) is sent whole from then on; caches are
left to expire. The usage's ``cachedContentTokenCount`` (explicit or the API's implicit
caching) is recorded as cached prompt tokens.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from csro.config import LLMConfig
from csro.llm._http import HTTPProvider, key_of, model_of, png_base64, prefill_as_instruction, reply_of, split_system
from csro.errors import ProviderError
from csro.llm._types import LLMReply, LLMRequest, Message

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
CACHE_TTL = "600s"
_ROLES = {"user": "user", "assistant": "model"}


class GeminiProvider(HTTPProvider):
    """Gemini's generateContent."""

    name = "gemini"
    # google.rpc status codes of a quota, an overload or the service's own fault
    TRANSIENT = frozenset({"RESOURCE_EXHAUSTED", "UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL", "ABORTED"})

    def __init__(self, model: str, *, key: str, base_url: str | None = None, cache: bool = True,
                 key_env: str | None = None):
        super().__init__(model, base_url or DEFAULT_BASE_URL, {"x-goog-api-key": key}, key, key_env)
        self.cache = cache
        self._caches: dict[str, str | None] = {}  # prefix digest -> cachedContents name (None: refused)
        self._cache_lock = threading.Lock()

    @classmethod
    def from_config(cls, llm: LLMConfig, _: object = None) -> "GeminiProvider":
        env = llm.api_key_env or "GEMINI_API_KEY"
        return cls(model_of(llm), key=key_of(env), base_url=llm.base_url, cache=llm.prompt_cache, key_env=env)

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        prefix = self._prefix(request)
        if prefix is not None:
            self._ensure_cache(prefix, timeout_s)
        return super().complete(request, timeout_s)

    def build(self, request: LLMRequest) -> tuple[str, dict[str, Any]]:
        system, chat = split_system(prefill_as_instruction(request.messages, request.prefill))
        config: dict[str, Any] = {"temperature": request.temperature, "maxOutputTokens": request.max_tokens,
                                  "seed": request.seed}
        if request.stop:
            config["stopSequences"] = list(request.stop)
        body: dict[str, Any] = {"contents": [_content(m) for m in chat], "generationConfig": config}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        prefix = self._prefix(request)
        name = self._caches.get(prefix[0]) if prefix is not None else None
        if name is not None:
            body["cachedContent"] = name
            body["contents"] = body["contents"][1:]
            body.pop("systemInstruction", None)
        return f"/v1beta/models/{self.model}:generateContent", body

    def parse(self, request: LLMRequest, data: Any) -> LLMReply:
        parts = data["candidates"][0]["content"]["parts"]
        usage = data.get("usageMetadata") or {}
        return reply_of(self, request, "".join(p["text"] for p in parts if "text" in p),
                        usage.get("promptTokenCount"), usage.get("candidatesTokenCount"),
                        tokens_cached=usage.get("cachedContentTokenCount"))

    def _prefix(self, request: LLMRequest) -> tuple[str, dict[str, Any]] | None:
        """(digest, cachedContents body) of the request's stable prefix, or None (nothing to cache)."""
        if not self.cache:
            return None
        system, chat = split_system(list(request.messages))
        if len(chat) < 2 or chat[0].role != "user":
            return None
        body: dict[str, Any] = {"model": f"models/{self.model}", "contents": [_content(chat[0])], "ttl": CACHE_TTL}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest(), body

    def _ensure_cache(self, prefix: tuple[str, dict[str, Any]], timeout_s: float) -> None:
        digest, body = prefix
        with self._cache_lock:  # one creation per prefix, even with concurrent calls
            if digest in self._caches:
                return
            try:
                self._caches[digest] = str(self.post("/v1beta/cachedContents", body, timeout_s)["name"])
            except ProviderError as exc:
                if exc.retryable:
                    raise
                self._caches[digest] = None
            except (KeyError, TypeError):
                self._caches[digest] = None


def _content(m: Message) -> dict[str, Any]:
    return {"role": _ROLES[m.role], "parts": [{"text": m.content}] + [
        {"inline_data": {"mime_type": "image/png", "data": data}} for data in png_base64(m.images)]}
