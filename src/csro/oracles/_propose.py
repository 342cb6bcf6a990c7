"""Drawing programs from the LLM: sample, extract, check, repair, fall back, evaluate, pick.

The machinery every oracle shares. One *generation step* (``propose``, ``refine-3``,
``rewrite-2`` ...) of refinement round ``j``:

1. draw ``samples`` replies at once (``complete_many``; the sample index is the key's third
   field), extract the program of each (``extract_code``) and check it in the sandbox
   (``check_programs``);
2. send each invalid one back with its error, up to ``max_repairs`` times (keys
   ``repair-<j>-<r>``, same sample index); a provider error is not repaired (the client
   has already retried it);
3. if still none is valid and ``grammar_fallback`` is on, one grammar-constrained call
   (``grammar-<j>``, see ``_grammar``);
4. play the valid programs against sigma (``ctx.evaluate``) and keep the best by utility.

Hennes et al. (arXiv 2603.10098) only say weak models produce invalid code; repair,
fallback and sampling several programs are ours. Every program becomes an attempt dict and
an ``oracle_candidate`` event; every rejection an ``oracle_rejected`` event with its reason.
An invalid program is never returned.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from csro.evaluation.runner import derive_seed
from csro.llm._types import CallKey, LLMReply, LLMRequest, Message

from ._base import Feedback, OracleContext
from ._check import check_programs
from ._code import extract_code
from ._context import STOP, prefill
from ._grammar import grammar_for

GRAMMAR_TOKENS = 512


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A valid program with its feedback and the call keys that produced it."""

    source: str
    feedback: Feedback
    keys: tuple[str, ...]

    @property
    def utility(self) -> float:
        return self.feedback.utility


@dataclasses.dataclass
class _Draft:
    """One sample's latest reply while it is being checked and repaired."""

    messages: list[Message]
    keys: list[str]
    reply: LLMReply | None = None
    source: str | None = None
    error: str | None = None


class Proposer:
    """Runs generation steps for one best-response call and records every attempt."""

    def __init__(self, ctx: OracleContext):
        self.ctx = ctx
        self.attempts: list[dict] = []

    def request(self, step: str, messages: Sequence[Message], sample: int = 0, *, prefill_text: str | None = None,
                grammar: str | None = None, stop: tuple[str, ...] = STOP, max_tokens: int | None = None) -> LLMRequest:
        """A request keyed ``(iteration, step, sample)``, seeded from the run seed and the key."""
        ctx = self.ctx
        key = CallKey(ctx.iteration, step, sample)
        return LLMRequest(
            key=key, messages=tuple(messages),
            prefill=prefill(ctx.game, ctx.config) if prefill_text is None else prefill_text,
            grammar=grammar, stop=stop, max_tokens=max_tokens or ctx.config.max_tokens,
            temperature=ctx.temperature, seed=derive_seed(ctx.seed, str(key)))

    def generate(self, step: str, messages: Sequence[Message], round_: int, parent_keys: Sequence[str] = ()) -> Candidate | None:
        """One generation step (see the module docstring); the best valid candidate or None."""
        cfg = self.ctx.config
        drafts = [_Draft(list(messages), list(parent_keys)) for _ in range(cfg.samples)]
        self._draw(step, drafts, [self.request(step, messages, s) for s in range(cfg.samples)])
        for r in range(cfg.max_repairs):
            broken = [(s, d) for s, d in enumerate(drafts) if d.error is not None and d.reply is not None and d.reply.ok]
            if not broken:
                break
            requests = []
            for s, d in broken:
                d.messages = d.messages + [Message("assistant", d.reply.full_text), Message("user", repair_prompt(d.error, self.ctx.game.policy_class))]
                requests.append(self.request(f"repair-{round_}-{r}", d.messages, s))
            self._draw(f"repair-{round_}-{r}", [d for _, d in broken], requests)
        valid = [d for d in drafts if d.error is None]
        if not valid and cfg.grammar_fallback:
            head, gbnf = grammar_for(self.ctx.game)
            draft = _Draft(list(messages), list(parent_keys))
            request = self.request(f"grammar-{round_}", messages, prefill_text=head, grammar=gbnf,
                                   stop=(), max_tokens=min(GRAMMAR_TOKENS, cfg.max_tokens))
            self._draw(f"grammar-{round_}", [draft], [request])
            valid = [draft] if draft.error is None else []
        return self._best(step, valid)

    def _draw(self, step: str, drafts: Sequence[_Draft], requests: Sequence[LLMRequest]) -> None:
        """Complete ``requests`` (one per draft), extract and check the programs, record rejections."""
        replies = self.ctx.llm.complete_many(requests)
        game = self.ctx.game
        for d, request, reply in zip(drafts, requests, replies):
            d.reply = reply
            d.keys.append(str(request.key))
            if not reply.ok:
                d.source, d.error = None, f"LLM call failed: {reply.error}"
                continue
            extracted = extract_code(reply.full_text, game.policy_class)
            d.source, d.error = extracted.source, extracted.error
        pending = [d for d in drafts if d.source is not None]
        checked = check_programs(game, [d.source for d in pending], derive_seed(self.ctx.seed, "check", *(d.keys[-1] for d in pending)))
        for d, error in zip(pending, checked):
            d.error = error
        for d in drafts:
            if d.error is not None:
                self._record(d.keys[-1], step, d.error, None)

    def _best(self, step: str, valid: Sequence[_Draft]) -> Candidate | None:
        """Evaluate the valid drafts against sigma; the best one (the first on ties)."""
        best: Candidate | None = None
        for d in valid:
            feedback = self.ctx.evaluate(d.source)
            self._record(d.keys[-1], step, None, feedback.utility)
            if best is None or feedback.utility > best.utility:
                best = Candidate(d.source, feedback, tuple(d.keys))
        return best

    def _record(self, key: str, step: str, error: str | None, utility: float | None) -> None:
        attempt = {"key": key, "step": key.split("/")[1], "valid": error is None, "error": error, "utility": utility}
        self.attempts.append(attempt)
        self.ctx.log("oracle_candidate", attempt)
        if error is not None:
            self.ctx.log("oracle_rejected", {"key": key, "step": step, "reason": error})


def repair_prompt(error: str, class_name: str) -> str:
    """The message that sends a failed program back with its error."""
    return (f"That program is not valid: {error}\n"
            f"Fix it. Reply with the whole corrected class {class_name} in one ```python block.")
