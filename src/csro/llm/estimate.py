"""``csro run CONFIG --estimate``: the LLM calls, tokens and dollars a run would spend, with no
call made. Hennes et al. (arXiv 2603.10098) give no cost model; this one is ours.

1. The first prompt is rendered for real: the oracle's own context builder on the initial
   population (sigma_0 is the initial policy), its system message and prefill.
2. Its tokens are counted with the provider's tokenizer where one is available offline (the
   embedded model's, llama.cpp with the vocabulary only), else with csro's approximation
   (``csro.llm.tokens``, which is also what the ``files`` provider records).
3. Later prompts are that prompt plus what the loop adds, in tokens: the opponents' code
   (each a completion-sized program, ``OPPONENT_CODE_CHARS`` in all at most), the program
   sent back with its feedback (refinement, rewrite) or its error (repair), a diagnosis.
4. The calls the configuration allows (K, M, samples, repairs, the grammar fallback,
   descriptions, diagnoses; islands x population x generations for ``evolve``) are counted
   for three ``SCENARIOS``: how long completions are, how many drafts fail their check, how
   likely a program scores u < 0 (so that another of the M refinement rounds runs: round j
   runs with probability ``negative ** j``), how many opponents are shown. ``high`` is the
   most the configuration allows; ``expected`` is our prior (docs/cost.md says how it was
   set). A ``files`` run's completions are its reply files (shortest, mean, longest), and the
   share of them holding no extractable program is its share of invalid drafts.
5. Dollars are tokens times the price (``csro.llm.prices``), every prompt token priced as
   fresh input (cache hits only lower the cost).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

from csro.llm._types import CallKey, LLMRequest, Message
from csro.llm.prices import Price, price_of
from csro.llm.tokens import CHARS_PER_TOKEN, approx_prompt_tokens, approx_tokens

ERROR_TOKENS = 60  # a check error and the request to fix it (repair prompts)
FEEDBACK_TOKENS = 40  # the feedback's header and request (refinement), plus PER_OPPONENT_TOKENS each
PER_OPPONENT_TOKENS = 12
OBSERVATION_TOKENS = 250  # reflect: outcomes, key moments and memory of the diagnosis prompt
MUTATION_TOKENS = 80  # evolve: scores and the mutation request around the parent's code


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


class _Tally:
    """Expected calls and tokens (fractional: scenario rates are probabilities)."""

    def __init__(self) -> None:
        self.calls = self.tokens_in = self.tokens_out = 0.0

    def add(self, calls: float, tokens_in: float, tokens_out: float) -> None:
        self.calls += calls
        self.tokens_in += calls * tokens_in
        self.tokens_out += calls * tokens_out


def estimate_run(config) -> Estimate:
    """The estimate of a ``csro.config.RunConfig``; no LLM call is made."""
    # The loop's modules import the LLM layer: imported here, when an estimate is asked for.
    from csro.evaluation.policy_ref import resolve
    from csro.games import load_game
    from csro.oracles import Opponent, get_oracle, prefill

    llm, oracle_cfg = config.llm, config.oracle
    game = load_game(config.game)
    spec = dataclasses.replace(resolve(config.initial_policy, game), name="p0")
    opponent = Opponent("p0", 1.0, spec, spec.builtin.description if spec.builtin else "")
    messages = tuple(get_oracle(oracle_cfg.kind).context.messages(game, [opponent], oracle_cfg))
    head = prefill(game, oracle_cfg)
    counter, count = _counter(llm)
    first = count(messages, head)
    completions, invalid, notes = _replies(llm, oracle_cfg.max_tokens, game.policy_class)
    if invalid is None and (llm.provider, llm.model) in EXPECTED_INVALID:
        invalid = EXPECTED_INVALID[llm.provider, llm.model]
        notes += (f"invalid drafts: {invalid:.0%} expected, as measured for {llm.model} (docs/oracles.md)",)
    rules = count((Message("user", game.rules_text),), "")
    override = Price(**llm.prices.model_dump()) if llm.prices is not None else None
    price = price_of(llm.provider, llm.model if llm.provider != "files" else None, override)
    scenarios, used = {}, []
    for sc in SCENARIOS:
        out = completions[sc.name]
        if invalid is not None and sc.name == "expected":
            sc = dataclasses.replace(sc, invalid=invalid)
        used.append(sc)
        tally = _tally(config, sc, first, out, out + approx_tokens(head), rules)
        tin, tout = math.ceil(tally.tokens_in), math.ceil(tally.tokens_out)
        scenarios[sc.name] = {"calls": math.ceil(tally.calls), "tokens_in": tin, "tokens_out": tout,
                              "usd": None if price is None else price.cost(tin, tout)}
    model = llm.path if llm.provider in ("files", "replay") else llm.model
    return Estimate(llm.provider, model, counter, first, price, scenarios, tuple(used), notes)


def _counter(llm) -> tuple[str, Callable[[tuple[Message, ...], str], int]]:
    """(what counts, a prompt-token counter of (messages, prefill))."""
    if llm.provider == "embedded":
        from csro.llm._factory import make_provider

        provider = make_provider(llm)
        return f"the embedded model's tokenizer ({provider.model}, llama.cpp)", provider.count_tokens

    def approx(messages: tuple[Message, ...], head: str) -> int:
        return approx_prompt_tokens(LLMRequest(CallKey(1, "propose"), messages, head))

    return f"csro's approximation ({CHARS_PER_TOKEN} characters per token)", approx


def _replies(llm, max_tokens: int, class_name: str) -> tuple[dict[str, float], float | None, tuple[str, ...]]:
    """(completion tokens of a code call per scenario, the expected share of invalid drafts if
    known, notes): for ``files`` the reply files' sizes and how many hold no program."""
    if llm.provider == "files" and llm.path is not None:
        from csro.llm.files import FilesProvider
        from csro.extract import extract_code

        texts = [p.read_text(encoding="utf-8") for p in FilesProvider(llm.path).files]
        sizes = [approx_tokens(t) for t in texts]
        invalid = sum(extract_code(t, class_name).source is None for t in texts) / len(texts)
        return ({"low": min(sizes), "expected": sum(sizes) / len(sizes), "high": max(sizes)}, invalid,
                (f"completions: the {len(texts)} reply files of {llm.path}, {invalid:.0%} without a program",))
    return {sc.name: sc.completion * max_tokens for sc in SCENARIOS}, None, ()


def _tally(config, sc: Scenario, first: int, out: float, program: float, rules: int) -> _Tally:
    """The calls of the whole run under scenario ``sc``; ``program`` is a written policy's tokens."""
    from csro.oracles import DESCRIPTION_TOKENS, DIAGNOSIS_TOKENS, DIFF_TOKENS, OPPONENT_CODE_CHARS

    cfg = config.oracle
    ctx = cfg.context
    tally = _Tally()
    code_cap = OPPONENT_CODE_CHARS / CHARS_PER_TOKEN
    for k in range(1, config.iterations + 1):
        written = k - 1  # LLM-written policies in the population at iteration k
        shown = min(written, ctx.k if ctx.filter == "top_k" else written)
        shown = shown if sc.all_opponents else min(shown, 1)
        prompt = float(first)
        if ctx.opponents in ("code", "both"):
            prompt += min(shown * program, code_cap)
        if ctx.opponents in ("description", "both") and written:
            description = min(DESCRIPTION_TOKENS, cfg.max_tokens) * sc.completion
            prompt += shown * description
            tally.add(1, rules + min(program, code_cap) + ERROR_TOKENS, description)  # the newest one's description
        if cfg.kind == "evolve":
            _evolve(tally, config, sc, prompt, program, min(DIFF_TOKENS, cfg.max_tokens))
            continue
        _step(tally, cfg, sc, prompt, out)
        rounds = 0 if cfg.kind == "zero_shot" else sc.rounds(cfg.max_refinements)
        feedback = program + FEEDBACK_TOKENS + PER_OPPONENT_TOKENS * (shown + 1)
        if cfg.kind == "reflect":
            diagnosis = min(DIAGNOSIS_TOKENS, cfg.max_tokens) * sc.completion
            tally.add(rounds, prompt + feedback + OBSERVATION_TOKENS, diagnosis)
            feedback += OBSERVATION_TOKENS + diagnosis
        _step(tally, cfg, sc, prompt + feedback, out, times=rounds)
    return tally


def _step(tally: _Tally, cfg, sc: Scenario, prompt: float, out: float, times: float = 1.0) -> None:
    """One generation step of the oracles (``csro.oracles._propose``), ``times`` times: the
    samples, their repairs while they fail, and the grammar fallback when all failed."""
    from csro.oracles import GRAMMAR_TOKENS

    tally.add(times * cfg.samples, prompt, out)
    chat = prompt
    for r in range(cfg.max_repairs):
        chat += out + ERROR_TOKENS
        tally.add(times * cfg.samples * sc.invalid ** (r + 1), chat, out)
    if cfg.grammar_fallback:
        all_failed = sc.invalid ** ((cfg.max_repairs + 1) * cfg.samples)
        tally.add(times * all_failed, prompt, min(GRAMMAR_TOKENS, cfg.max_tokens) * sc.completion)


def _evolve(tally: _Tally, config, sc: Scenario, prompt: float, program: float, diff_tokens: int) -> None:
    """One iteration of the evolutionary oracle: islands x population x generations mutations."""
    ev = config.oracle.evolve
    calls = ev.islands * ev.population_size * ev.generations
    if ev.max_llm_calls is not None:
        calls = min(calls, ev.max_llm_calls)
    mutation = prompt + (1 + ev.inspirations) * program + MUTATION_TOKENS
    out = sc.completion * (ev.diff_ratio * diff_tokens + (1 - ev.diff_ratio) * config.oracle.max_tokens)
    tally.add(calls, mutation, out)


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
