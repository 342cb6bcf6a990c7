"""Several samples of one prompt decoded together, as parallel sequences of one llama.cpp context
(issue 26 item 3; our construction, not described by Hennes et al.).

A forward pass over a few tokens reads the weights once, so it costs less than as many passes
over one token, and samples that share their whole prompt are generated faster side by side
(on this project's 2-core CPU, where one sequence is already compute-bound, modestly: 1.5B, 1
thread, a pass over 4 tokens cost 2.6x one over a single token, x1.53 tokens a second,
``docs/llm.md``). The prompt is evaluated once, as sequence 0; its cells are shared with
sequences 1..n-1 (``llama_memory_seq_cp`` copies no data in a unified cache); then every step
decodes one batch holding the newest token of each sequence still running, and each sequence's
sampler (its own seed and grammar) samples from its own row.

A row's logits depend on the other rows of its batch (``bench/decode_rows.py``), so a reply
is a function of its whole group, never of its request alone: the caller must always decode
the same requests together (``EmbeddedProvider.complete_group``).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence


@dataclasses.dataclass
class Sample:
    """One sample being decoded: its sampler, its budget, its stop strings, what it wrote."""

    sampler: Any  # llama_cpp._internals.LlamaSampler, its own seed and grammar
    max_tokens: int
    stops: Sequence[bytes]
    tokens: list[int] = dataclasses.field(default_factory=list)
    text: bytes = b""
    done: bool = False


def decode(llama: Any, prompt: Sequence[int], sequences: Sequence[Sample], deadline: float,
           progress: Callable[[int, float], None]) -> bool:
    """Decode ``sequences`` in parallel after ``prompt``, which ``llama`` has just evaluated as
    sequence 0 (its last token's logits are the newest). Each sequence ends at an end-of-
    generation token, its ``max_tokens`` or its first stop string (``text`` is cut before it,
    as llama-cpp-python's ``create_completion`` does). Returns False when ``deadline`` passed
    first (the unfinished sequences keep what they wrote). Leaves only the prompt's cells of
    sequence 0 in the cache."""
    import llama_cpp

    ctx, vocab = llama._ctx, llama._model.vocab
    memory = llama_cpp.llama_get_memory(ctx.ctx)
    n = len(sequences)
    for s in range(1, n):
        llama_cpp.llama_memory_seq_cp(memory, 0, s, -1, -1)
    batch = llama_cpp.llama_batch_init(n, 0, 1)
    try:
        rows = {s: -1 for s in range(n)}  # sequence -> its row in the newest batch of logits
        position = len(prompt)
        while True:
            for s, row in rows.items():
                _take(llama, prompt, sequences[s], sequences[s].sampler.sample(ctx, row), vocab)
            running = [s for s in range(n) if not sequences[s].done]
            progress(sum(len(q.tokens) for q in sequences), time.monotonic())
            if not running:
                return True
            if time.monotonic() > deadline:
                return False
            batch.n_tokens = len(running)
            for row, s in enumerate(running):
                batch.token[row] = sequences[s].tokens[-1]
                batch.pos[row] = position
                batch.n_seq_id[row] = 1
                batch.seq_id[row][0] = s
                batch.logits[row] = True
            if llama_cpp.llama_decode(ctx.ctx, batch) != 0:
                raise RuntimeError(f"llama_decode failed at position {position} with {len(running)} sequences")
            rows = {s: row for row, s in enumerate(running)}
            position += 1
    finally:
        llama_cpp.llama_batch_free(batch)
        for s in range(1, n):
            llama_cpp.llama_memory_seq_rm(memory, s, -1, -1)
        llama_cpp.llama_memory_seq_rm(memory, 0, len(prompt), -1)


def _take(llama: Any, prompt: Sequence[int], seq: Sample, token: int, vocab: Any) -> None:
    """Add a sampled token to ``seq`` and end it where ``create_completion`` would."""
    import llama_cpp

    if llama_cpp.llama_vocab_is_eog(vocab, token):
        seq.done = True
        return
    seq.tokens.append(token)
    seq.text = llama.detokenize(seq.tokens, prev_tokens=list(prompt))
    cuts = [seq.text.index(stop) for stop in seq.stops if stop in seq.text]
    if cuts:
        seq.text, seq.done = seq.text[:min(cuts)], True
    elif len(seq.tokens) >= seq.max_tokens:
        seq.done = True
