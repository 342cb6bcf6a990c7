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
``csro.llm.models``) replaces llama.cpp's defaults for those. The model is loaded on the
first call and serves one request at a time (``max_concurrency = 1``). ``timeout_s`` stops a generation that runs longer; the stopped
call is an error, not retried (it would take as long again).

``count_tokens`` counts a chat's prompt tokens exactly as ``complete`` would send them, with
the model's vocabulary only (no weights loaded), for ``csro run --estimate``.
"""

from __future__ import annotations

import dataclasses
import pathlib
import threading
import time
from typing import Any

from csro.llm._types import LLMReply, LLMRequest, Message
from csro.llm.models import Sampling
from csro.errors import ProviderError

N_CTX = 4096  # prompts of 2-3k tokens plus a policy-sized completion
DEFAULT_THREADS = 1  # two threads collapse when another process holds one of the two cores (bench/, docs/llm.md)

# ChatML, the format of the Qwen models, for a GGUF without a chat template.
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class EmbeddedProvider:
    """One GGUF model in this process."""

    name = "embedded"
    max_concurrency: int | None = 1
    grammar = True

    def __init__(self, path: str | pathlib.Path, *, model: str | None = None, threads: int | None = None,
                 n_ctx: int = N_CTX, sampling: Sampling | None = None):
        self.path = pathlib.Path(path)
        self.sampling = sampling
        self.model = model or self.path.stem
        self.threads = threads or DEFAULT_THREADS
        self.n_ctx = n_ctx
        self._llama: Any = None
        self._formatter: Any = None
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
                text, _ = _render(formatter, messages, prefill)
                return len(llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))
            finally:
                if llama is not self._llama:
                    llama.close()

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        from llama_cpp import LlamaGrammar, StoppingCriteriaList

        with self._lock:
            prompt, template_stop = self.prompt(request.messages, request.prefill)
            deadline = time.monotonic() + timeout_s
            expired = []

            def past_deadline(tokens: Any, logits: Any) -> bool:
                if time.monotonic() > deadline:
                    expired.append(True)
                return bool(expired)

            grammar = LlamaGrammar.from_string(request.grammar, verbose=False) if request.grammar else None
            self._llama.reset()  # a reused KV-cache prefix changes the logits' rounding, and so the text
            try:
                out = self._llama.create_completion(
                    prompt, max_tokens=request.max_tokens, temperature=request.temperature, seed=request.seed,
                    stop=list(request.stop) + template_stop, grammar=grammar,
                    stopping_criteria=StoppingCriteriaList([past_deadline]),
                    **(dataclasses.asdict(self.sampling) if self.sampling else {}))
            except ValueError as exc:  # e.g. the prompt does not fit the context
                raise ProviderError(f"llama.cpp: {exc}", retryable=False) from None
        if expired:
            raise ProviderError(f"generation exceeded the time limit of {timeout_s:g} s", retryable=False)
        usage = out["usage"]
        return LLMReply(request.key, out["choices"][0]["text"], self.name, self.model, usage["prompt_tokens"],
                        usage["completion_tokens"], prefill=request.prefill)

    def close(self) -> None:
        """Free the model (it is loaded again if called later)."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = self._formatter = None

    def _load(self) -> None:
        if self._llama is not None:
            return
        from llama_cpp import Llama

        llama = Llama(model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.threads,
                      n_threads_batch=self.threads, verbose=False)
        self._formatter = _formatter(llama)
        self._llama = llama


def _formatter(llama: Any) -> Any:
    """The chat formatter of the model's own template (ChatML without one)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata.get("tokenizer.chat_template") or CHATML
    eos, bos = llama.token_eos(), llama.token_bos()
    return Jinja2ChatFormatter(
        template, eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llama._model.token_get_text(bos) if bos != -1 else "", add_generation_prompt=True)


def _render(formatter: Any, messages: tuple[Message, ...], prefill: str) -> tuple[str, list[str]]:
    result = formatter(messages=[{"role": m.role, "content": m.content} for m in messages])
    stop = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
    return result.prompt + prefill, [s for s in stop if s]
