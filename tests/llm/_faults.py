"""A fault-injecting LLM server on 127.0.0.1 (a thread) in the shape of the OpenAI, Gemini or
Anthropic API, for whole runs against a flaky provider (issue 38).

Its reply to a request depends only on the request (``reply_for(body) -> text``). On the way
it can fail like a hosted API: a burst of rate limits (with ``Retry-After``) for its first
``burst_s`` seconds, then every successful reply is preceded by ``failures_per_reply`` failed
attempts (of whichever requests come), each with the next fault of ``faults`` in turn
(``FAULTS``: error statuses with the API's own bodies, an HTML 503, a dropped connection, a
truncated body, a 200 without the reply's fields, a reply slower than the client's timeout,
an empty body, a body its ``Content-Encoding`` cannot decode); ``gone_after`` successful
replies it goes down for good (the port refuses connections). It answers at most
``max_requests`` requests (then 400s), so a client that never gives up cannot loop forever.
``always`` (status, body) answers every request so (a refused key, say).
"""

from __future__ import annotations

import collections
import http.server
import json
import threading
import time
from typing import Callable

# the API's error body of a rate limit and of an overload, and the reply without its fields
_RATE_LIMIT = {
    "openai": (429, {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}),
    "gemini": (429, {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED",
                               "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}}),
    "anthropic": (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}),
}
_OVERLOAD = {
    "openai": (503, {"error": {"message": "The server is overloaded", "type": "server_error", "code": None}}),
    "gemini": (503, {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    "anthropic": (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
}
_NO_FIELDS = {"openai": {"id": "chatcmpl-1", "object": "chat.completion", "choices": []},
              "gemini": {"candidates": [], "usageMetadata": {"promptTokenCount": 3}},
              "anthropic": {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}}

FAULTS = ("rate_limit", "overload", "internal", "html_503", "drop", "truncate", "no_fields", "slow", "empty",
          "garbled")


def reply_body(kind: str, text: str) -> dict:
    """The API's successful reply carrying ``text``."""
    if kind == "openai":
        return {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 150}}
    if kind == "gemini":
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}],
                "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 150}}
    return {"content": [{"type": "text", "text": text}], "usage": {"input_tokens": 900, "output_tokens": 150}}


class FaultServer:
    """See the module docstring. ``port`` 0 picks a free one; give the port of a server that
    went down to bring it back where the run looks for it. ``injected`` counts the faults sent
    by name, ``answered`` the successful replies, ``requests`` every request."""

    def __init__(self, kind: str, reply_for: Callable[[dict], str], *, port: int = 0, burst_s: float = 0.0,
                 failures_per_reply: int = 0, faults: tuple[str, ...] = FAULTS, slow_s: float = 2.0,
                 gone_after: int | None = None, max_requests: int = 400,
                 always: tuple[int, dict] | None = None):
        self.kind = kind
        self.injected: collections.Counter = collections.Counter()
        self.answered = 0
        self.requests = 0
        self._failed_since_reply = 0
        self._next_fault = 0
        self._started: float | None = None
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                action = server._decide(json.loads(raw or b"null"))
                server._act(self, *action)

            def log_message(self, *args):
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._reply_for = reply_for
        self._burst_s, self._per_reply, self._faults = burst_s, failures_per_reply, faults
        self._slow_s, self._gone_after, self._max_requests = slow_s, gone_after, max_requests
        self._always = always
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._down = False

    # -- what to do with one request ---------------------------------------------------------
    def _decide(self, body: dict) -> tuple[str, object]:
        with self._lock:
            self.requests += 1
            now = time.monotonic()
            self._started = now if self._started is None else self._started
            if self._down:
                return "drop", None
            if self._always is not None:
                return "status", self._always
            if self.requests > self._max_requests:
                return "status", (400, {"error": {"message": "the test server's request cap was reached"}})
            if now - self._started < self._burst_s:
                self.injected["burst"] += 1
                return "rate_limit", None
            if self._failed_since_reply < self._per_reply:
                fault = self._faults[self._next_fault % len(self._faults)]
                self._next_fault += 1
                self._failed_since_reply += 1
                self.injected[fault] += 1
                return fault, body
            self._failed_since_reply = 0
            self.answered += 1
            if self._gone_after is not None and self.answered >= self._gone_after:
                self._down = True
                threading.Thread(target=self.close, daemon=True).start()
            return "ok", body

    def _act(self, handler: http.server.BaseHTTPRequestHandler, what: str, arg) -> None:
        kind = self.kind
        if what == "ok":
            return _send(handler, 200, json.dumps(reply_body(kind, self._reply_for(arg))).encode())
        if what == "rate_limit":
            status, body = _RATE_LIMIT[kind]
            return _send(handler, status, json.dumps(body).encode(), {"Retry-After": "1"})
        if what == "overload":
            status, body = _OVERLOAD[kind]
            return _send(handler, status, json.dumps(body).encode())
        if what == "internal":
            return _send(handler, 500, b'{"error": {"message": "internal error", "type": "server_error"}}')
        if what == "html_503":
            return _send(handler, 503, b"<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>",
                         {"Content-Type": "text/html"})
        if what == "no_fields":
            return _send(handler, 200, json.dumps(_NO_FIELDS[kind]).encode())
        if what == "truncate":
            data = json.dumps(reply_body(kind, self._reply_for(arg))).encode()
            return _send(handler, 200, data[: len(data) // 2], declared=len(data))
        if what == "slow":
            time.sleep(self._slow_s)
            return _send(handler, 200, json.dumps(reply_body(kind, self._reply_for(arg))).encode())
        if what == "empty":
            return _send(handler, 200, b"")
        if what == "garbled":  # a body its Content-Encoding cannot decode
            return _send(handler, 200, b"not gzip at all", {"Content-Encoding": "gzip"})
        if what == "status":
            status, body = arg
            return _send(handler, status, json.dumps(body).encode())
        handler.close_connection = True  # "drop": no reply at all

    # -- life --------------------------------------------------------------------------------
    def __enter__(self) -> "FaultServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Down for good: the listening socket is closed, so connections are refused."""
        self._down = True
        self._httpd.shutdown()
        self._httpd.server_close()


def _send(handler, status: int, data: bytes, headers: dict[str, str] | None = None,
          declared: int | None = None) -> None:
    """Send one response; ``declared`` a longer Content-Length than ``data`` (then the
    connection is closed: a body cut short)."""
    try:
        handler.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(declared if declared is not None else len(data)))
        if declared is not None:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
        pass
