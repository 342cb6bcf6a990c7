"""The LLM side of a run's cost estimate (``csro run CONFIG --estimate``, ``csro.cost``): how
tokens are counted, how long completions are, the scenarios, and the tally of calls and tokens.
Hennes et al. (arXiv 2603.10098) give no cost model; this one is ours.

- Tokens are counted with the provider's tokenizer where one is available offline (the
  embedded model's, llama.cpp with the vocabulary only), else with csro's approximation
  (``csro.llm.tokens``, which is also what the ``files`` provider records) (``counter``).
- Three ``SCENARIOS`` read a configuration: how long completions are, how many drafts fail
  their check, how likely a program scores u < 0 (so that another of the M refinement rounds
  runs: round j runs with probability ``negative ** j``), how many opponents are shown.
  ``high`` is the most the configuration allows; ``expected`` is our prior (docs/cost.md says
  how it was set). A ``files`` run's completions are its reply files (shortest, mean,
  longest), and the share of them holding no extractable program is its share of invalid
  drafts (``completions``).
- What each oracle's calls are is declared by the oracle (``csro.oracles.Oracle.cost``); K,
  the players and the final best response multiply them in ``csro.cost``.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Callable

from csro.registry import PROVIDERS
from csro.llm._types import CallKey, LLMRequest, Message
from csro.llm.prices import Price, price_of
from csro.llm.tokens import CHARS_PER_TOKEN, approx_prompt_tokens, approx_tokens


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One reading of the configuration: completion length as a share of ``max_tokens``, the
    share of drafts that fail their check (and of repairs that fail again), the probability
    that a step's best program scores u < 0 (another refinement round follows), and whether
    every opponent the filter allows is shown (else one)."""

    name: str
    completion: float
    invalid: float
    negative: float
    all_opponents: bool

    def rounds(self, m: int) -> float:
        """The expected refinement rounds of one oracle call: round j runs if all before it scored u < 0."""
        return sum(self.negative ** j for j in range(1, m + 1))


SCENARIOS = (Scenario("low", 0.25, 0.0, 0.0, False), Scenario("expected", 0.5, 0.3, 0.5, True),
             Scenario("high", 1.0, 1.0, 1.0, True))
# The expected share of invalid drafts where it was measured: the embedded default model with the
# full CSRO context wrote 0/5 valid programs with the prefill and 1/5 after two repairs
# (bench/valid_rate.py, docs/oracles.md, 2026-12-03).
EXPECTED_INVALID = {("embedded", "qwen2.5-coder-0.5b"): 0.9}


@dataclasses.dataclass(frozen=True)
class Estimate:
    """What ``csro run --estimate`` prints: per scenario ``{"calls", "tokens_in", "tokens_out", "usd"}``."""

    provider: str
    model: str | None
    counter: str
    first_prompt_tokens: int
    price: Price | None
    scenarios: dict[str, dict]
    used: tuple[Scenario, ...]
    notes: tuple[str, ...] = ()


class Tally(collections.Counter):
    """Expected ``calls``, ``tokens_in`` and ``tokens_out`` (fractional: scenario rates are probabilities)."""

    def add(self, calls: float, tokens_in: float, tokens_out: float) -> None:
        """``calls`` calls of ``tokens_in`` prompt and ``tokens_out`` completion tokens each."""
        self.update(calls=calls, tokens_in=calls * tokens_in, tokens_out=calls * tokens_out)

    def merge(self, other: "Tally", times: float = 1.0) -> None:
        """Add ``other`` ``times`` over."""
        self.update({key: times * value for key, value in other.items()})


def counter(llm) -> tuple[str, Callable[[tuple[Message, ...], str], int]]:
    """(what counts, a prompt-token counter of (messages, prefill))."""
    if PROVIDERS.load(llm.provider).counts_tokens:
        from csro.llm._factory import make_provider

        provider = make_provider(llm)
        return f"the {provider.name} model's tokenizer ({provider.model})", provider.count_tokens

    def approx(messages: tuple[Message, ...], head: str) -> int:
        return approx_prompt_tokens(LLMRequest(CallKey(1, "propose"), messages, head))

    return f"csro's approximation ({CHARS_PER_TOKEN} characters per token)", approx


def completions(llm, max_tokens: int, class_name: str) -> tuple[dict[str, float], float | None, tuple[str, ...]]:
    """(completion tokens of a code call per scenario, the expected share of invalid drafts if
    known, notes): for ``files`` the reply files' sizes and how many hold no program; for a
    model whose valid rate was measured, that rate (``EXPECTED_INVALID``)."""
    if llm.provider == "files" and llm.path is not None:
        from csro.llm.files import FilesProvider
        from csro.extract import extract_code

        texts = [p.read_text(encoding="utf-8") for p in FilesProvider(llm.path).files]
        sizes = [approx_tokens(t) for t in texts]
        invalid = sum(extract_code(t, class_name).source is None for t in texts) / len(texts)
        return ({"low": min(sizes), "expected": sum(sizes) / len(sizes), "high": max(sizes)}, invalid,
                (f"completions: the {len(texts)} reply files of {llm.path}, {invalid:.0%} without a program",))
    outs = {sc.name: sc.completion * max_tokens for sc in SCENARIOS}
    if (llm.provider, llm.model) in EXPECTED_INVALID:
        invalid = EXPECTED_INVALID[llm.provider, llm.model]
        return outs, invalid, (f"invalid drafts: {invalid:.0%} expected, as measured for {llm.model} (docs/oracles.md)",)
    return outs, None, ()


def price(llm) -> Price | None:
    """The price of the run's model: ``llm.prices``, else the dated table's (``files``: free)."""
    override = Price(**llm.prices.model_dump()) if llm.prices is not None else None
    return price_of(llm.provider, llm.model if llm.provider != "files" else None, override)


def model_label(llm) -> str | None:
    """What the estimate names as the model: the model, or the folder or run a reply comes from."""
    return llm.path if llm.provider in ("files", "replay") else llm.model


def format_estimate(e: Estimate) -> str:
    """The estimate as the terminal shows it."""
    lines = [f"estimate for {e.provider} / {e.model}: no LLM call was made",
             f"first prompt: {e.first_prompt_tokens} tokens, counted with {e.counter}",
             "price: " + ("unknown (give llm.prices)" if e.price is None else
                          f"${e.price.input:g}/M input, ${e.price.output:g}/M output"),
             f"{'':10}{'calls':>8}{'tokens in':>12}{'tokens out':>12}{'tokens':>12}{'USD':>12}"]
    for name, s in e.scenarios.items():
        usd = "unknown" if s["usd"] is None else f"${s['usd']:.4f}"
        lines.append(f"{name:10}{s['calls']:>8}{s['tokens_in']:>12}{s['tokens_out']:>12}"
                     f"{s['tokens_in'] + s['tokens_out']:>12}{usd:>12}")
    completions = "reply files" if e.provider == "files" else None
    lines += list(e.notes) + ["scenarios (docs/cost.md): " + "; ".join(
        f"{s.name}: completions {completions or f'{s.completion:.0%} of max_tokens'}, "
        f"{s.invalid:.0%} of drafts invalid, P(u < 0) {s.negative:.0%}" for s in e.used)]
    return "\n".join(lines) + "\n"
