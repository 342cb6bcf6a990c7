"""A scripted HTTP server on 127.0.0.1 (a thread) for the hosted providers' request-shape tests."""

from __future__ import annotations

import dataclasses
import http.server
import json
import threading
import time


@dataclasses.dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict


@dataclasses.dataclass
class Answer:
    """What to send back: a JSON body (or raw bytes), a status, extra headers, after a delay."""

    body: object = None
    status: int = 200
    delay_s: float = 0.0
    raw: bytes | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


class ScriptedServer:
    """Answers each request with the next scripted Answer (the last one repeats); a request to a
    path in ``routes`` gets that path's Answer instead."""

    def __init__(self, *answers: Answer, routes: dict[str, Answer] | None = None):
        self.answers = list(answers)
        self.routes = dict(routes or {})
        self.seen: list[Seen] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                server.seen.append(Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if self.path in server.routes:
                    answer = server.routes[self.path]
                else:
                    answer = server.answers.pop(0) if len(server.answers) > 1 else server.answers[0]
                time.sleep(answer.delay_s)
                data = answer.raw if answer.raw is not None else json.dumps(answer.body).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def log_message(self, *args):
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
