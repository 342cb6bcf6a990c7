"""Would decoding the samples of one request together pay on this CPU? Tokens per second of one
decode step over B tokens, against B steps over one.

    python bench/decode_batching.py [--model qwen2.5-coder-1.5b] [--context 1536] [--batches 1,2,4,8]
                                    [--rounds 3] [--steps 4] [--threads 1]

N samples decoded as parallel sequences over one shared prefix cost, per generated token of
each, one forward pass over N tokens instead of N passes over one. This bench times that pass
directly: after a ``--context``-token prompt it decodes, for each B, ``--steps`` steps of B
tokens at the same position (B consecutive positions of one sequence: the same matrix products
as B sequences of one token each, with at most B more cells of attention). The B values take
turns for ``--rounds`` rounds so that a change in the machine's load hits them alike. Printed:
seconds per step and generated tokens per second per B, and the speed-up over B = 1 — the
ceiling of what batched sampling could gain in the generation phase (it gains nothing in the
prefill, which prefix reuse already shares).
"""

from __future__ import annotations

import argparse
import time

from csro.llm import ensure_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--context", type=int, default=1536, help="prompt tokens before the decode steps")
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4, help="decode steps per B and round")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    from llama_cpp import Llama

    llama = Llama(model_path=str(ensure_model(args.model)), n_ctx=4096, n_threads=args.threads,
                  n_threads_batch=args.threads, verbose=False)
    text = "def act(self, observation):\n    return 'ROCK'\n" * (args.context // 8)
    prompt = llama.tokenize(text.encode(), add_bos=True)[:args.context]
    started = time.monotonic()
    llama.eval(prompt)
    print(f"{args.model}, {args.threads} thread(s): prompt of {len(prompt)} tokens in {time.monotonic() - started:.1f} s",
          flush=True)
    batches = [int(b) for b in args.batches.split(",")]
    seconds = {b: 0.0 for b in batches}
    total = args.rounds * len(batches)
    for r in range(args.rounds):
        for i, b in enumerate(batches):
            for _ in range(args.steps):
                llama.n_tokens = len(prompt)  # eval drops the cells from here on: every step at the same position
                t = time.perf_counter()
                llama.eval(prompt[:b])
                seconds[b] += time.perf_counter() - t
            done = r * len(batches) + i + 1
            spent = time.monotonic() - started
            print(f"  round {r + 1}/{args.rounds}, B = {b}: {done}/{total} done, ~{spent / done * (total - done):.0f} s left",
                  flush=True)
    steps = args.rounds * args.steps
    base = steps / seconds[batches[0]] * batches[0]
    print("| B (sequences) | s per step | generated tok/s | speed-up over B = " + str(batches[0]) + " |\n|---|---|---|---|")
    for b in batches:
        rate = steps * b / seconds[b]
        print(f"| {b} | {seconds[b] / steps:.3f} | {rate:.1f} | x{rate / base:.2f} |")
    llama.close()


if __name__ == "__main__":
    main()
