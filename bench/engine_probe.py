"""llama-cpp-python (csro's embedded provider) against the prebuilt ``xllamacpp`` engine on one
real CSRO prompt: speed cold and warm, the same text for the same seed, GBNF, memory.

    python bench/engine_probe.py write probe.json [--model qwen2.5-coder-1.5b]   # the project's venv
    python bench/engine_probe.py run probe.json --engine embedded                # the project's venv
    python bench/engine_probe.py run probe.json --engine xllamacpp               # a venv with xllamacpp

``write`` renders, with the loop's own context builder (``bench/valid_rate.py``'s RRPS best
response, ``make demo``'s scaffold prompt), two requests that share their context and differ in
the last user message (A and B), plus A under the RRPS rule grammar, and saves their prompt
text (the model's chat template applied), stop strings, grammar and seed. ``run`` sends, in
this order: A (cold), B, A, A, then the grammar request twice. ``xllamacpp`` is not a csro
dependency: install it into a scratch venv (``python -m venv /tmp/x && /tmp/x/bin/pip install
xllamacpp``); ``run --engine xllamacpp`` imports only the standard library and the engine.
The embedded run uses ``EmbeddedProvider`` as it ships, on the same chat. Printed per call: prompt tokens, how many came from the engine's cache,
completion tokens, prefill and generation seconds (xllamacpp's own timers; for the embedded,
``engine_throughput.Timed``'s), and whether its
text equals the cold A's (or the first grammar reply's); then the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import time

THREADS = 1


def write(path: str, model: str, max_tokens: int) -> None:
    from valid_rate import rrps_opponents

    from csro.config import OracleConfig
    from csro.games import load_game
    from csro.llm import Message, ensure_model
    from csro.llm.embedded import EmbeddedProvider
    from csro.oracles._context import STOP, ContextBuilder, prefill
    from csro.oracles._grammar import grammar_for

    game = load_game("rrps")
    config = OracleConfig(prompt="scaffold", context={"opponents": "code", "filter": "top_k", "k": 3})
    messages = ContextBuilder().messages(game, list(rrps_opponents(game)), config)
    provider = EmbeddedProvider(ensure_model(model), model=model, threads=THREADS)
    head, gbnf = grammar_for(game)

    def request(tail: str, start: str, grammar: str | None) -> dict:
        chat = tuple(messages[:-1]) + (Message("user", messages[-1].content + tail),)
        text, template_stop = provider.prompt(chat, start)
        return {"messages": [(m.role, m.content) for m in chat], "prefill": start, "prompt": text,
                "stop": list(STOP if grammar is None else ()), "template_stop": template_stop, "grammar": grammar,
                "seed": 11, "temperature": 0.8, "max_tokens": max_tokens}

    probe = {"model": str(ensure_model(model)),
             "A": request("", prefill(game, config), None), "B": request("\nBe bold.", prefill(game, config), None),
             "grammar": request("", head, gbnf)}
    provider.close()
    pathlib.Path(path).write_text(json.dumps(probe))
    print(f"wrote {path}")


class Embedded:
    """csro's embedded provider as it ships (llama-cpp-python, prefix reuse), timed by the
    throughput bench's wrapper."""

    def __init__(self, model: str):
        from engine_throughput import Timed

        from csro.llm.embedded import EmbeddedProvider

        self.timed = Timed(EmbeddedProvider(model, threads=THREADS), "embedded", None)

    def complete(self, r: dict) -> dict:
        from csro.llm import CallKey, LLMRequest, Message

        request = LLMRequest(CallKey(0, "probe", 0), tuple(Message(role, text) for role, text in r["messages"]),
                             prefill=r["prefill"], grammar=r["grammar"], stop=tuple(r["stop"]),
                             max_tokens=r["max_tokens"], temperature=r["temperature"], seed=r["seed"])
        reply = self.timed.complete(request, 600)
        timers = self.timed.calls[-1]
        return {"text": reply.text, "in": reply.tokens_in, "cached": reply.tokens_cached, "out": reply.tokens_out,
                "prefill_s": timers["prefill_s"], "gen_s": timers["generate_s"]}


class XLlamaCpp:
    """The llama.cpp server in-process (one slot, its prompt cache on after the cold call)."""

    def __init__(self, model: str):
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = model
        params.n_ctx = 4096
        params.n_parallel = 1
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = THREADS
        params.warmup = False
        self.server = xllamacpp.Server(params)
        self.calls = 0

    def complete(self, r: dict) -> dict:
        body = {"prompt": r["prompt"], "n_predict": r["max_tokens"], "temperature": r["temperature"], "seed": r["seed"],
                "stop": r["stop"] + r["template_stop"], "cache_prompt": self.calls > 0}
        if r["grammar"]:
            body["grammar"] = r["grammar"]
        self.calls += 1
        out = self.server.handle_completions(body)
        t = out["timings"]
        return {"text": out["choices"][0]["text"], "in": out["usage"]["prompt_tokens"], "cached": t["cache_n"],
                "out": out["usage"]["completion_tokens"], "prefill_s": t["prompt_ms"] / 1e3, "gen_s": t["predicted_ms"] / 1e3}


def run(path: str, engine: str) -> None:
    probe = json.loads(pathlib.Path(path).read_text())
    started = time.monotonic()
    client = {"embedded": Embedded, "xllamacpp": XLlamaCpp}[engine](probe["model"])
    print(f"{engine}: model loaded in {time.monotonic() - started:.1f} s, {THREADS} thread(s)", flush=True)
    plan = [("A cold", "A"), ("B", "B"), ("A after B", "A"), ("A again", "A"), ("grammar", "grammar"),
            ("grammar again", "grammar")]
    print("| call | prompt tok (cached) | completion tok | prefill s | generation s | same text |\n|---|---|---|---|---|---|")
    first: dict[str, str] = {}
    for label, name in plan:
        reply = client.complete(probe[name])
        same = "" if name == "B" or name not in first else ("yes" if reply["text"] == first[name] else "NO")
        first.setdefault(name, reply["text"])
        print(f"| {label} | {reply['in']} ({reply['cached']}) | {reply['out']} | {reply['prefill_s']:.1f} | "
              f"{reply['gen_s']:.1f} | {same} |", flush=True)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, "
          f"{time.monotonic() - started:.0f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("path")
    w.add_argument("--model", default="qwen2.5-coder-1.5b")
    w.add_argument("--max-tokens", type=int, default=160)
    r = sub.add_parser("run")
    r.add_argument("path")
    r.add_argument("--engine", choices=["embedded", "xllamacpp"], required=True)
    args = parser.parse_args()
    if args.command == "write":
        write(args.path, args.model, args.max_tokens)
    else:
        run(args.path, args.engine)


if __name__ == "__main__":
    main()
