"""The ``embedded`` provider: a small GGUF model run in-process by llama.cpp
(``llama-cpp-python``), csro's default, offline and without a key.

Hennes et al. (arXiv 2603.10098) use hosted frontier models; a local 0.5B model is our
substitute so that a run needs nothing outside the machine (see ``csro.llm.models``).

Prompting: the chat is formatted with the model's own chat template (the GGUF metadata
``tokenizer.chat_template``, rendered by llama-cpp-python's Jinja2 formatter; ChatML, the
Qwen format, when a file has none), the assistant's turn is opened (generation prompt) and
``request.prefill`` appended, so the model writes the continuation. A GBNF ``grammar``
constrains the completion. Sampling is seeded with ``request.seed``: the same request gives
the same text; ``sampling`` (a model's published top-p, top-k and repetition penalty, see
``csro.llm.models``) replaces llama.cpp's defaults for those. Under a grammar the completion
is sampled from the whole grammar-masked distribution at the request's temperature, with no
top-k, top-p or min-p cut (our choice, issue 26): the grammar already keeps the reply valid,
and the cuts only narrowed it further, so that the rule grammar's samples collapsed onto one
program (make demo's rewrite prompt, the 1.5B, 10 seeds: 5 distinct programs at temperature
1.3 with llama.cpp's default top-k 40, top-p 0.95 and min-p 0.05, 8 without them;
``docs/llm.md``). The model is loaded on the
first call and serves one request (or one group, below) at a time (``max_concurrency = 1``). ``timeout_s`` stops
a generation that runs longer; the stopped call is an error, not retried (it would take as
long again).

Prefix reuse (issue 26; our construction, llama.cpp gives no such guarantee): the calls of a
run share most of their prompt (system, rules, API, opponents; every sample of one request
shares all of it), and recomputing it was most of a call's time. But logits are not
bit-identical across batch splits, so keeping llama-cpp-python's longest common prefix would
make a reply depend on the call before it, and ``csro resume`` and ``replay`` would drift.
So the prompt is evaluated in batches of ``n_batch`` tokens aligned to position 0, and only
KV cells that were computed in such a *whole* batch of an earlier prompt are kept, cut at a
multiple of ``n_batch`` below the common prefix and below the new prompt's last token: the
warm path then evaluates exactly the batches the cold path evaluates after them, on the same
cells, and the reply is byte-identical (tested, with and without a grammar). Cells written
while generating (one token at a time) or in a prompt's last, partial batch are never reused.
``reply.tokens_cached`` counts the prompt tokens taken from the cache.

Samples decoded together (issue 26 item 3; ``complete_group``, ``csro.llm._parallel``): the
requests of one ``LLMClient.complete_many`` that share their prompt (the samples of one
proposal, evolve's rewrites of one parent) are decoded as parallel sequences over the prompt's
cells, up to ``MAX_GROUP`` at a time, which on a CPU costs little more a step than one
sequence. A row's logits depend on the rows beside it, so a reply is a function of its group:
``_groups`` makes the groups from the request list alone, and the client sends the whole list
again when any of it is unrecorded (``csro.llm._client``), so ``csro resume`` decodes the same
groups. The group's prompt is evaluated exactly as ``complete`` evaluates a prompt (the prefix
reuse above), so a group's replies are byte-identical with or without a cached prefix (tested).

``on_generation(key, tokens, seconds, done)``, when set (``LLMClient`` sets it from its own),
hears how a completion is going: at most twice a second while tokens come, and once when it
ends, so a user interface can show the tokens and the rate of a long generation. A group is
reported under its first request's key with ``(+n)`` for the n others, and the tokens of all
its sequences.

``count_tokens`` counts a chat's prompt tokens exactly as ``complete`` would send them, with
the model's vocabulary only (no weights loaded), for ``csro run --estimate``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from csro.config import LLMConfig
from csro.llm import _parallel
from csro.llm._types import LLMReply, LLMRequest, Message
from csro.llm.models import DEFAULT_MODEL, MODELS, Sampling, ensure_model
from csro.errors import ConfigError, ProviderError

N_CTX = 4096  # prompts of 2-3k tokens plus a policy-sized completion
# The unit of prefix reuse (see the module docstring): at most N_BATCH - 1 shared tokens are
# evaluated again. Prefill ran as fast in batches of 64 as of 512 (llama-cpp-python's default;
# bench/decode_batching.py, docs/llm.md), so the small unit costs nothing.
N_BATCH = 64
# Under a grammar: no truncation of the masked distribution (module docstring).
UNTRUNCATED = {"top_k": 0, "top_p": 1.0, "min_p": 0.0}
# The most samples of one prompt decoded together (``complete_group``): 1.5B, 1 thread, a pass
# over 4 tokens gave x1.53 the tokens a second of one over a single token, over 8 only x1.27
# (bench/decode_batching.py, docs/llm.md).
MAX_GROUP = 4
PROGRESS_EVERY_S = 0.5  # the most often ``on_generation`` hears of a running completion
DEFAULT_THREADS = 1  # two threads collapse when another process holds one of the two cores (bench/, docs/llm.md)

# ChatML, the format of the Qwen models, for a GGUF without a chat template.
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class EmbeddedProvider:
    """One GGUF model in this process."""

    name = "embedded"
    max_concurrency: int | None = 1
    grammar = True
    free = True
    counts_tokens = True  # ``count_tokens``: the model's own tokenizer
    on_generation: Callable[[str, int, float, bool], None] | None = None  # module docstring

    @classmethod
    def from_config(cls, llm: LLMConfig, _: object = None) -> "EmbeddedProvider":
        if llm.path is not None:
            path = pathlib.Path(llm.path).expanduser()
            if not path.is_file():
                raise ConfigError(f"llm.path: no GGUF model file at {path}")
            # The model's name is the file's unless the configuration names it (its default, the
            # configuration's `llm.model`, names the 1.5B and would mislabel any other file).
            named = "model" in llm.model_fields_set and llm.model
            return cls(path, model=llm.model if named else path.stem, threads=llm.threads)
        name = llm.model or DEFAULT_MODEL
        path = ensure_model(name)  # refuses an unknown name
        return cls(path, model=name, threads=llm.threads, sampling=MODELS[name].sampling if llm.model_sampling else None)

    @classmethod
    def takes_images(cls, llm: LLMConfig) -> bool:
        return False

    def __init__(self, path: str | pathlib.Path, *, model: str | None = None, threads: int | None = None,
                 n_ctx: int = N_CTX, sampling: Sampling | None = None, n_batch: int = N_BATCH,
                 reuse_prefix: bool = True, truncate_grammar: bool = False):
        """``reuse_prefix=False`` recomputes every prompt from its first token, and
        ``truncate_grammar=True`` cuts a grammar's distribution as llama.cpp's defaults do: the
        behaviour before issue 26, the reference of ``bench/engine_throughput.py`` (the first
        gives the same text, the second changes it)."""
        self.path = pathlib.Path(path)
        self.sampling = sampling
        self.model = model or self.path.stem
        self.threads = threads or DEFAULT_THREADS
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.reuse_prefix = reuse_prefix
        self.truncate_grammar = truncate_grammar
        self._llama: Any = None
        self._formatter: Any = None
        self._batched = 0  # leading KV cells computed in whole aligned prompt batches: the reusable ones
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EmbeddedProvider(model={self.model!r}, path={str(self.path)!r}, threads={self.threads})"

    def prompt(self, messages: tuple[Message, ...], prefill: str) -> tuple[str, list[str]]:
        """(the prompt text ending in the opened assistant turn and the prefill, its stop strings)."""
        self._load()
        return _render(self._formatter, messages, prefill)

    def count_tokens(self, messages: tuple[Message, ...], prefill: str = "") -> int:
        """The prompt tokens of a chat as ``complete`` sends it (vocabulary only if not loaded)."""
        with self._lock:
            if self._llama is not None:
                llama, formatter = self._llama, self._formatter
            else:
                from llama_cpp import Llama
                from llama_cpp._utils import suppress_stdout_stderr

                with suppress_stdout_stderr(disable=False):  # llama.cpp warns that a vocabulary has no context size
                    llama = Llama(model_path=str(self.path), vocab_only=True, verbose=False)
                formatter = _formatter(llama)
            try:
                return len(_tokens(llama, formatter, messages, prefill)[0])
            finally:
                if llama is not self._llama:
                    llama.close()

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        from llama_cpp import LlamaGrammar, StoppingCriteriaList

        with self._lock:
            self._load()
            tokens, template_stop = _tokens(self._llama, self._formatter, request.messages, request.prefill)
            started = time.monotonic()
            deadline = started + timeout_s
            expired = []
            report = _Reporter(self.on_generation, str(request.key), len(tokens), started)

            def past_deadline(ids: Any, logits: Any) -> bool:
                now = time.monotonic()
                report(len(ids), now)
                if now > deadline:
                    expired.append(True)
                return bool(expired)

            grammar = LlamaGrammar.from_string(request.grammar, verbose=False) if request.grammar else None
            # llama-cpp-python keeps the common prefix of the first n_tokens cells and evaluates the rest
            self._llama.n_tokens = cached = self._reusable(tokens)
            self._batched = 0  # until this prompt is evaluated
            try:
                out = self._llama.create_completion(
                    tokens, max_tokens=request.max_tokens, temperature=request.temperature, seed=request.seed,
                    stop=list(request.stop) + template_stop, grammar=grammar,
                    stopping_criteria=StoppingCriteriaList([past_deadline]), **self._sampling(grammar is not None))
            except ValueError as exc:  # e.g. the prompt does not fit the context
                raise ProviderError(f"llama.cpp: {exc}", retryable=False) from None
            self._batched = len(tokens) // self.n_batch * self.n_batch
            report.done(out["usage"]["completion_tokens"])
        if expired:
            raise ProviderError(f"generation exceeded the time limit of {timeout_s:g} s", retryable=False)
        usage = out["usage"]
        return LLMReply(request.key, out["choices"][0]["text"], self.name, self.model, usage["prompt_tokens"],
                        usage["completion_tokens"], prefill=request.prefill, tokens_cached=cached)

    def complete_group(self, requests: Sequence[LLMRequest], timeout_s: float) -> list[LLMReply | ProviderError]:
        """The replies to ``requests``, decoded in groups (module docstring, "Samples decoded
        together"): requests with the same prompt run as parallel sequences, at most
        ``MAX_GROUP`` at a time and as many as the context holds at their ``max_tokens``; a
        request whose prompt no other shares takes ``complete``. Each reply depends on the whole
        list, so the same list gives the same replies. A request that failed has its
        ``ProviderError`` in its place."""
        with self._lock:
            self._load()
            prompts = [_tokens(self._llama, self._formatter, r.messages, r.prefill) for r in requests]
        replies: list[LLMReply | ProviderError | None] = [None] * len(requests)
        for group in _groups([p for p, _ in prompts], [r.max_tokens for r in requests], self.n_ctx):
            if len(group) == 1:
                try:
                    replies[group[0]] = self.complete(requests[group[0]], timeout_s)
                except ProviderError as exc:
                    replies[group[0]] = exc
                continue
            tokens, template_stop = prompts[group[0]]
            try:
                done = self._decode_group([requests[i] for i in group], tokens, template_stop, timeout_s)
            except ProviderError as exc:  # the group's failure, not its neighbours'
                done = [exc] * len(group)
            for i, reply in zip(group, done):
                replies[i] = reply
        return replies

    def _decode_group(self, requests: list[LLMRequest], tokens: list[int], template_stop: list[str],
                      timeout_s: float) -> list[LLMReply | ProviderError]:
        """Requests that share the prompt ``tokens``, decoded as parallel sequences."""
        from llama_cpp import LlamaGrammar

        with self._lock:
            started = time.monotonic()
            report = _Reporter(self.on_generation, f"{requests[0].key} (+{len(requests) - 1})", 0, started)
            samples = []
            for r in requests:
                self._llama.set_seed(r.seed)
                grammar = LlamaGrammar.from_string(r.grammar, verbose=False) if r.grammar else None
                sampler = self._llama._init_sampler(temp=r.temperature, grammar=grammar,
                                                    **self._sampling(grammar is not None))
                samples.append(_parallel.Sample(sampler, r.max_tokens, [s.encode() for s in (*r.stop, *template_stop)]))
            self._llama.n_tokens = cached = self._reusable(tokens)
            self._batched = 0  # until this prompt is evaluated
            try:
                self._llama.eval(tokens[cached:])
                finished = _parallel.decode(self._llama, tokens, samples, started + timeout_s, report)
            except RuntimeError as exc:
                raise ProviderError(f"llama.cpp: {exc}", retryable=False) from None
            finally:
                for sample in samples:
                    sample.sampler.close()
            self._batched = len(tokens) // self.n_batch * self.n_batch
            report.done(sum(len(s.tokens) for s in samples))
        late = ProviderError(f"generation exceeded the time limit of {timeout_s:g} s", retryable=False)
        # the first sample evaluated the prompt's uncached tokens; the others shared its cells
        return [LLMReply(r.key, s.text.decode("utf-8", errors="ignore"), self.name, self.model, len(tokens),
                         len(s.tokens), prefill=r.prefill, tokens_cached=cached if k == 0 else len(tokens))
                if finished or s.done else late for k, (r, s) in enumerate(zip(requests, samples))]

    def _sampling(self, grammar: bool) -> dict:
        """llama-cpp-python's sampling arguments besides the temperature (module docstring)."""
        sampling = dataclasses.asdict(self.sampling) if self.sampling else {}
        if grammar and not self.truncate_grammar:
            sampling.update(UNTRUNCATED)
        return sampling

    def _reusable(self, tokens: list[int]) -> int:
        """How many leading KV cells ``tokens`` can keep: the common prefix with the reusable
        cells, short of the prompt's last token (whose logits are sampled), down to a multiple
        of ``n_batch`` (0 without ``reuse_prefix``: the whole prompt is evaluated)."""
        if not self.reuse_prefix:
            return 0
        n = max(0, min(self._batched, len(tokens) - 1))
        differ = np.flatnonzero(self._llama.input_ids[:n] != np.asarray(tokens[:n]))
        common = int(differ[0]) if differ.size else n
        return common // self.n_batch * self.n_batch

    def close(self) -> None:
        """Free the model (it is loaded again if called later)."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = self._formatter = None
                self._batched = 0

    def _load(self) -> None:
        if self._llama is not None:
            return
        from llama_cpp import Llama

        from llama_cpp._internals import LlamaContext

        llama = Llama(model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.threads,
                      n_threads_batch=self.threads, n_batch=self.n_batch, n_ubatch=self.n_batch, verbose=False)
        # Parallel sequences (``complete_group``) need a context made for them, which ``Llama``
        # has no argument for: one KV cache of n_ctx cells that all sequences share (unified),
        # so a group's prompt is stored once. The context ``Llama`` made is replaced by it.
        llama.context_params.n_seq_max = MAX_GROUP
        llama.context_params.kv_unified = True
        made, llama._ctx = llama._ctx, llama._stack.enter_context(
            contextlib.closing(LlamaContext(model=llama._model, params=llama.context_params, verbose=False)))
        made.close()
        self._formatter = _formatter(llama)
        self._llama = llama


class _Reporter:
    """Calls ``on_generation`` for one completion: while it runs (throttled) and at its end."""

    def __init__(self, listener: Callable[[str, int, float, bool], None] | None, key: str, prompt: int, started: float):
        self.listener, self.key, self.prompt, self.started = listener, key, prompt, started
        self.last = started

    def __call__(self, ids: int, now: float) -> None:
        if self.listener is not None and now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            self.listener(self.key, ids - self.prompt, now - self.started, False)

    def done(self, tokens: int) -> None:
        if self.listener is not None:
            self.listener(self.key, tokens, time.monotonic() - self.started, True)


def _groups(prompts: Sequence[list[int]], max_tokens: Sequence[int], n_ctx: int) -> list[list[int]]:
    """The indices of requests decoded together: those with the same prompt (in the order they
    first appear), cut into runs of at most ``MAX_GROUP`` that fit ``n_ctx`` with every
    sequence at the group's largest ``max_tokens``. A function of its arguments alone, so the
    same requests always make the same groups."""
    same: dict[tuple[int, ...], list[int]] = {}
    for i, prompt in enumerate(prompts):
        same.setdefault(tuple(prompt), []).append(i)
    groups = []
    for prompt, members in same.items():
        room = (n_ctx - len(prompt)) // max(max(max_tokens[i] for i in members), 1)
        size = max(1, min(MAX_GROUP, room))
        groups += [members[k:k + size] for k in range(0, len(members), size)]
    return groups


def _formatter(llama: Any) -> Any:
    """The chat formatter of the model's own template (ChatML without one)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata.get("tokenizer.chat_template") or CHATML
    eos, bos = llama.token_eos(), llama.token_bos()
    return Jinja2ChatFormatter(
        template, eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llama._model.token_get_text(bos) if bos != -1 else "", add_generation_prompt=True)


def _tokens(llama: Any, formatter: Any, messages: tuple[Message, ...], prefill: str) -> tuple[list[int], list[str]]:
    """The prompt's tokens as llama-cpp-python makes them of its text (BOS where the model
    wants one), and the template's stop strings."""
    text, stop = _render(formatter, messages, prefill)
    return llama.tokenize(text.encode("utf-8"), add_bos=True, special=True), stop


def _render(formatter: Any, messages: tuple[Message, ...], prefill: str) -> tuple[str, list[str]]:
    result = formatter(messages=[{"role": m.role, "content": m.content} for m in messages])
    stop = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
    return result.prompt + prefill, [s for s in stop if s]
