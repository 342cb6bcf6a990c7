"""What the hosted providers (``openai``, ``gemini``, ``anthropic``) share: one POST with httpx,
HTTP failures mapped to ``ProviderError``, and the API key kept out of every message.

Retry classes (our reading of the providers' documentation; Hennes et al., arXiv
2603.10098, do not describe them; the client waits them out, ``csro.llm.retry``): transient
(``retryable=True``) are 408, 425, 429 and every 5xx (Anthropic's 529 overload included),
an error body whose type or status is one of the provider's ``TRANSIENT`` signals
(``rate_limit_error``, ``overloaded_error``, ``RESOURCE_EXHAUSTED``, ``UNAVAILABLE``, ...)
whatever its status (unless it names a ``PERMANENT`` one: OpenAI's 429
``insufficient_quota``), timeouts, connection errors, and malformed, truncated, undecodable
or empty bodies and missing fields (a server cut off mid-reply). Any other 4xx is the
request's fault and is not retried: 400 the request, 401/403 (or a 400 about the API key, as
Gemini sends) the key, and the message names the variable to set, 404 the model. The
server's wait is read from ``Retry-After`` (seconds or an HTTP date), ``retry-after-ms``, or
a Gemini ``RetryInfo.retryDelay``. Error texts carry the status and a short excerpt of the
body with the key replaced by ``***``; the key is never in a provider's ``repr`` or ``str``.
"""

from __future__ import annotations

import abc
import base64
import dataclasses
import email.utils
import json
import os
import time
from typing import Any

import httpx

from csro.config import LLMConfig
from csro.llm._types import LLMReply, LLMRequest, Message
from csro.errors import ConfigError, ProviderError

EXCERPT_CHARS = 200  # of a failed reply's body, in the error text
TRANSIENT_STATUSES = frozenset({408, 425, 429})  # and every status from 500


class HTTPProvider(abc.ABC):
    """Base of the hosted providers: subclasses build the request and parse the reply."""

    name = "http"
    max_concurrency: int | None = None
    grammar = False
    free = False
    counts_tokens = False
    TRANSIENT: frozenset[str] = frozenset()  # error types/statuses of the API's bodies that pass with time
    PERMANENT: frozenset[str] = frozenset()  # ... that never pass, whatever the status (an exhausted quota)

    @classmethod
    def takes_images(cls, llm: LLMConfig) -> bool:
        """The hosted APIs accept image parts (``Message.images``)."""
        return True

    def __init__(self, model: str, base_url: str, headers: dict[str, str], key: str | None,
                 key_env: str | None = None):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.key_env = key_env  # the variable the key was read from, for the message of a refused key
        self._key = key
        self._client = httpx.Client(headers=headers)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    __str__ = __repr__

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        path, body = self.build(request)
        data = self.post(path, body, timeout_s)
        try:
            return self.parse(request, data)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            raise ProviderError(self.scrub(f"reply without the expected fields ({type(exc).__name__}: {exc}): "
                                           f"{_excerpt(json.dumps(data))}"), retryable=True,
                                label="reply without its fields") from None

    @abc.abstractmethod
    def build(self, request: LLMRequest) -> tuple[str, dict[str, Any]]:
        """(path below ``base_url``, JSON body) of the request."""

    @abc.abstractmethod
    def parse(self, request: LLMRequest, data: Any) -> LLMReply:
        """The reply in a decoded body; may raise KeyError/IndexError/TypeError on a bad shape."""

    def post(self, path: str, body: dict[str, Any], timeout_s: float) -> Any:
        """The decoded JSON reply of one POST, or a ``ProviderError``."""
        url = self.base_url + path
        try:
            response = self._client.post(url, json=body, timeout=timeout_s)
            text = response.text  # httpx read the whole body: one cut short raised a TransportError
        except httpx.TimeoutException:
            raise ProviderError(f"POST {path}: no reply within {timeout_s:g} s", retryable=True,
                                label="timeout") from None
        except httpx.RequestError as exc:  # connection refused or dropped, a body cut short or undecodable
            raise ProviderError(self.scrub(f"POST {path}: {type(exc).__name__}: {exc}"), retryable=True,
                                label="connection error") from None
        status = response.status_code
        if status >= 400:
            raise self.refusal(path, response, text)
        if not text.strip():
            raise ProviderError(f"POST {path}: empty reply (HTTP {status})", retryable=True, label="empty reply")
        try:
            return json.loads(text)
        except ValueError:
            raise ProviderError(self.scrub(f"POST {path}: malformed JSON reply: {_excerpt(text)}"),
                                retryable=True, label="malformed reply") from None

    def refusal(self, path: str, response: httpx.Response, text: str) -> ProviderError:
        """The ``ProviderError`` of an HTTP error status (module docstring)."""
        status = response.status_code
        data = _json_or_none(text)
        signals = _error_signals(data)
        transient = ((status in TRANSIENT_STATUSES or status >= 500 or bool(signals & self.TRANSIENT))
                     and not signals & self.PERMANENT)
        message = f"POST {path}: {_excerpt(text)}"
        keyed = status in (401, 403) or "api key" in text.lower() or "api_key" in text.lower()  # Gemini: a 400
        if keyed and not transient:
            message += (f" (check the API key in environment variable {self.key_env}, named by llm.api_key_env)"
                        if self.key_env else " (no API key was sent: name its environment variable in "
                                             "llm.api_key_env)")
        label = str(status) + "".join(f" {s}" for s in sorted(signals & self.TRANSIENT))
        return ProviderError(self.scrub(message), retryable=transient, status=status,
                             retry_after=_retry_after(response.headers, data), label=label)

    def scrub(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        return text.replace(self._key, "***") if self._key else text

    def close(self) -> None:
        self._client.close()


def reply_of(provider: HTTPProvider, request: LLMRequest, text: Any, tokens_in: Any, tokens_out: Any,
             prefill: str = "", tokens_cached: Any = 0, tokens_cache_write: Any = 0) -> LLMReply:
    """The LLMReply of a parsed body; ``text`` must be a string (else the reply is malformed).
    ``tokens_in`` counts every prompt token, the cached and cache-written ones included."""
    if not isinstance(text, str):
        raise TypeError(f"the reply text is {type(text).__name__}, not a string")
    return LLMReply(request.key, text, provider.name, provider.model, int(tokens_in or 0), int(tokens_out or 0),
                    prefill=prefill, tokens_cached=int(tokens_cached or 0),
                    tokens_cache_write=int(tokens_cache_write or 0))


def prefill_as_instruction(messages: tuple[Message, ...], prefill: str) -> list[Message]:
    """The chat with an instruction to start the reply with ``prefill``, for APIs that cannot
    prefill the assistant's turn: appended to the last user message (or as a new one)."""
    chat = list(messages)
    if not prefill:
        return chat
    line = f"Start your reply with exactly:\n{prefill}"
    if chat and chat[-1].role == "user":
        chat[-1] = dataclasses.replace(chat[-1], content=f"{chat[-1].content}\n\n{line}")
    else:
        chat.append(Message("user", line))
    return chat


def png_base64(images: tuple[bytes, ...]) -> list[str]:
    """The attached PNG images of a message, base64-encoded for a JSON body."""
    return [base64.b64encode(image).decode("ascii") for image in images]


def split_system(messages: list[Message]) -> tuple[str, list[Message]]:
    """(the system messages joined, the other messages) for APIs with a separate system field."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    return system, [m for m in messages if m.role != "system"]


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _error_signals(data: Any) -> set[str]:
    """The type, code and status strings of an API's error body (``{"error": {...}}``, or
    Anthropic's ``{"type": "error", "error": {...}}``)."""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, list) and error:  # some servers wrap Gemini's error in a list
        error = error[0].get("error") if isinstance(error[0], dict) else None
    if not isinstance(error, dict):
        return set()
    return {str(error[k]) for k in ("type", "code", "status") if isinstance(error.get(k), (str, int))}


def _retry_after(headers: httpx.Headers, data: Any) -> float | None:
    """The seconds the server asked to wait: ``Retry-After`` (seconds or an HTTP date),
    ``retry-after-ms``, or Gemini's ``RetryInfo.retryDelay`` ("30s"); None if it did not say."""
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError, IndexError):
            pass
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                pass
    return None


def _excerpt(text: str) -> str:
    """The first ``EXCERPT_CHARS`` characters of ``text`` on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "..."


def model_of(llm: LLMConfig) -> str:
    """``llm.model``, which a hosted provider needs."""
    if not llm.model:
        raise ConfigError(f"llm.model: the {llm.provider} provider needs a model name")
    return llm.model


def key_of(env: str) -> str:
    """The API key in environment variable ``env`` (read here, once; never stored)."""
    key = os.environ.get(env)
    if not key:
        raise ConfigError(f"llm.api_key_env: environment variable {env} is not set")
    return key
