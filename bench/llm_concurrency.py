"""LLM call concurrency: N oracle calls through ``csro.llm.LLMClient`` against a local server.

A local ``ThreadingHTTPServer`` speaks the OpenAI chat-completions API and answers every
request after a fixed delay (a stand-in for a hosted model's latency). N calls are timed
through ``LLMClient(concurrency=N)`` and through ``concurrency=1``; the speed-up is
``N * delay / elapsed`` (N for perfectly parallel calls, 1 for serial ones). Target of the
CSRO issue: >= 0.8 * N. Usage: python bench/llm_concurrency.py [--calls 8] [--delay 0.5]
"""

from __future__ import annotations

import argparse
import http.server
import json
import threading
import time

from csro.config import LLMConfig
from csro.llm import CallKey, LLMClient, LLMRequest, Message, make_provider


def serve(delay_s: float) -> http.server.ThreadingHTTPServer:
    """A chat-completions server on 127.0.0.1 that sleeps ``delay_s`` per request."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as hosted APIs
        disable_nagle_algorithm = True  # else headers and body in two segments wait ~40 ms for an ACK

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(delay_s)
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "class Agent: ..."}}],
                               "usage": {"prompt_tokens": 10, "completion_tokens": 4}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256  # the default backlog of 5 drops simultaneous connects (1 s SYN retry)

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def timed(url: str, calls: int, concurrency: int) -> float:
    """Seconds for ``calls`` requests through a client of the given concurrency."""
    provider = make_provider(LLMConfig(provider="openai", model="bench", base_url=url))
    client = LLMClient(provider, concurrency=concurrency, retries=0, timeout_s=60)
    requests = [LLMRequest(CallKey(1, "propose", i), (Message("user", "write a policy"),)) for i in range(calls)]
    start = time.perf_counter()
    replies = client.complete_many(requests)
    elapsed = time.perf_counter() - start
    client.close()
    failed = [r.error for r in replies if not r.ok]
    if failed:
        raise SystemExit(f"{len(failed)} calls failed: {failed[0]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8, help="N: calls, and the concurrent client's concurrency")
    parser.add_argument("--delay", type=float, default=0.5, help="the server's delay per request, seconds")
    args = parser.parse_args()
    server = serve(args.delay)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        ideal = args.calls * args.delay
        for concurrency in (args.calls, 1):
            elapsed = timed(url, args.calls, concurrency)
            ratio = ideal / elapsed
            print(f"concurrency={concurrency:2d}: {args.calls} calls x {args.delay:g} s delay in {elapsed:.3f} s; "
                  f"throughput ratio {ratio:.2f} (ratio/N {ratio / args.calls:.2f})")
            if concurrency == args.calls:
                verdict = "meets" if ratio >= 0.8 * args.calls else "misses"
                print(f"  {verdict} the target ratio >= 0.8*N = {0.8 * args.calls:.1f}")
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
