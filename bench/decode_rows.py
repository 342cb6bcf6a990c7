"""Does a sequence decode to the same logits alone as beside sibling sequences? (issue 26, item 3)

Samples of one request could be decoded together, as parallel sequences over one shared
prompt. A reply stays exact (the same request gives the same text, for ``csro resume`` and
``replay``) only if a sequence's logits do not depend on which siblings share its batch, or
if the samples are always decoded as the same group. This probe answers the first question
for one model and thread count with llama.cpp's own batch API (``llama_cpp`` low-level
bindings): the prompt (this file's text, ``--prompt`` tokens) is decoded once into every
sequence; then sequence 0's next two tokens are decoded alone and beside 1, 3, 7, ...
siblings, and its logit rows are compared bit for bit.

Usage: python bench/decode_rows.py [--model qwen2.5-coder-1.5b --threads 1 --siblings 1,3,7,15]
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np

from csro.llm.models import ensure_model


def main() -> None:
    import llama_cpp as ll

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="an embedded model name (csro.llm.models)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=700, help="prompt tokens shared by the sequences")
    ap.add_argument("--siblings", default="1,3,7,15", help="sibling counts to compare against decoding alone")
    args = ap.parse_args()
    siblings = [int(k) for k in args.siblings.split(",")]
    seqs = max(siblings) + 1

    ll.llama_backend_init()
    model = ll.llama_model_load_from_file(str(ensure_model(args.model)).encode(), ll.llama_model_default_params())
    params = ll.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = args.prompt + 64, 512, 512
    params.n_seq_max, params.kv_unified = seqs, True
    params.n_threads = params.n_threads_batch = args.threads
    ctx = ll.llama_init_from_model(model, params)
    vocab = ll.llama_model_get_vocab(model)
    n_vocab = ll.llama_vocab_n_tokens(vocab)
    memory = ll.llama_get_memory(ctx)

    text = pathlib.Path(__file__).read_bytes() * 4
    buffer = (ll.llama_token * len(text))()  # never more tokens than bytes
    count = ll.llama_tokenize(vocab, text, len(text), buffer, len(buffer), True, False)
    tokens = list(buffer[:min(count, args.prompt)])
    if len(tokens) < args.prompt:
        raise SystemExit(f"the prompt text has only {len(tokens)} tokens")

    def decode(entries: list[tuple[int, int, list[int], bool]]) -> list[np.ndarray]:
        """Decode ``(token, position, sequence ids, wants logits)`` as one batch; the logit rows."""
        batch = ll.llama_batch_init(len(entries), 0, seqs)
        try:
            for i, (token, pos, ids, wants) in enumerate(entries):
                batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, pos, len(ids), wants
                for j, seq in enumerate(ids):
                    batch.seq_id[i][j] = seq
            batch.n_tokens = len(entries)
            if ll.llama_decode(ctx, batch) != 0:
                raise SystemExit("llama_decode failed")
            return [np.ctypeslib.as_array(ll.llama_get_logits_ith(ctx, i), shape=(n_vocab,)).copy()
                    for i, entry in enumerate(entries) if entry[3]]
        finally:
            ll.llama_batch_free(batch)

    every = list(range(seqs))
    for start in range(0, len(tokens), 512):
        decode([(t, start + i, every, False) for i, t in enumerate(tokens[start:start + 512])])
    step = [tokens[5 + 3 * s] for s in every]

    def two_steps(group: int) -> list[np.ndarray]:
        """Sequence 0's logit rows for two steps decoded beside ``group - 1`` siblings."""
        for seq in every:
            ll.llama_memory_seq_rm(memory, seq, len(tokens), -1)
        first = decode([(step[s], len(tokens), [s], True) for s in range(group)])[0]
        second = decode([(step[(s + 1) % seqs], len(tokens) + 1, [s], True) for s in range(group)])[0]
        return [first, second]

    alone = two_steps(1)
    print(f"{args.model}, {args.threads} thread(s), {len(tokens)} prompt tokens: sequence 0's logits beside siblings")
    print("| siblings | step 1 bitwise equal | step 2 bitwise equal | max abs difference |\n|---|---|---|---|")
    for k in siblings:
        rows = two_steps(k + 1)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(alone, rows))
        print(f"| {k} | {np.array_equal(alone[0], rows[0])} | {np.array_equal(alone[1], rows[1])} | {diff:.3g} |")


if __name__ == "__main__":
    main()
