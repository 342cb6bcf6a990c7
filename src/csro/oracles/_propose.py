"""Drawing programs from the LLM: sample, extract, check, repair, fall back, evaluate, pick.

The machinery every oracle shares. One *generation step* (``propose``, ``refine-3``,
``rewrite-2`` ...) of refinement round ``j``:

1. draw ``samples`` replies at once (``complete_many``; the sample index is the key's third
   field), extract the program of each (``extract_code``) and check it in the sandbox
   (``Arena.check``; the loop itself is ``csro.drafting``, shared with evolve and robots);
2. send each invalid one back with its error, up to ``max_repairs`` times (keys
   ``repair-<j>-<r>``, same sample index); a provider error is not repaired (the client
   has already retried it);
3. if still none is valid and ``grammar_fallback`` is on, one grammar-constrained call
   (``grammar-<j>``, see ``_grammar``);
4. play the valid programs against sigma (``Arena.evaluate``) and keep the best by utility;
   a program the call has already drawn (the same ``program_id``: equal but for layout,
   comments and docstrings, issue 26) is recorded as a duplicate of the first, not played again.

Hennes et al. (arXiv 2603.10098) only say weak models produce invalid code; repair,
fallback and sampling several programs are ours. Every program becomes an ``Attempt`` and
an ``oracle_candidate`` event; every rejection an ``oracle_rejected`` event with its reason.
An invalid program is never returned.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from csro.arena import Feedback
from csro.authorship import GRAMMAR, MODEL
from csro.drafting import Draft, Drafting, repair_prompt, settle, write
from csro.extract import extract_code, program_id
from csro.config import OracleConfig
from csro.llm import LLMRequest, Message
from csro.llm.estimate import Scenario, Tally

from ._base import Attempt, OracleContext
from ._context import STOP, prefill
from ._grammar import grammar_for
from csro.events import ORACLE_CANDIDATE, ORACLE_REJECTED

GRAMMAR_TOKENS = 512
ERROR_TOKENS = 60  # a check error and the request to fix it (repair prompts; cost model)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A valid program with its feedback, the call keys that produced it and its author
    (``csro.authorship``: the model, or the grammar of the fallback)."""

    source: str
    feedback: Feedback
    keys: tuple[str, ...]
    author: str = MODEL

    @property
    def utility(self) -> float:
        return self.feedback.utility


class Proposer:
    """Runs generation steps for one best-response call and records every attempt."""

    def __init__(self, ctx: OracleContext, repair_hints: bool = True):
        self.ctx = ctx
        self.repair_hints = repair_hints  # off only in bench/valid_rate.py, to measure them
        self.attempts: list[Attempt] = []
        self._played: dict[str, Attempt] = {}  # program_id -> the attempt that played it

    def request(self, step: str, messages: Sequence[Message], sample: int = 0, *, prefill_text: str | None = None,
                grammar: str | None = None, stop: tuple[str, ...] = STOP, max_tokens: int | None = None) -> LLMRequest:
        """A request keyed ``(iteration, step, sample)``, seeded from the run seed and the key."""
        ctx = self.ctx
        return ctx.llm.request(step, messages, sample,
                               prefill=prefill(ctx.game, ctx.config) if prefill_text is None else prefill_text,
                               grammar=grammar, stop=stop, max_tokens=max_tokens or ctx.config.max_tokens)

    def generate(self, step: str, messages: Sequence[Message], round_: int, parent_keys: Sequence[str] = ()) -> Candidate | None:
        """One generation step (see the module docstring); the best valid candidate or None."""
        cfg = self.ctx.config
        drafts = [Draft(list(messages), list(parent_keys), extra={"sample": s}) for s in range(cfg.samples)]
        write(self.ctx.llm.complete_many, drafts, [self.request(step, messages, s) for s in range(cfg.samples)],
              self._drafting(step, round_))
        valid = [d for d in drafts if d.valid]
        if not valid and cfg.grammar_fallback:
            head, gbnf = grammar_for(self.ctx.game)
            draft = Draft(list(messages), list(parent_keys), extra={"sample": 0, "author": GRAMMAR})
            request = self.request(f"grammar-{round_}", messages, prefill_text=head, grammar=gbnf,
                                   stop=(), max_tokens=min(GRAMMAR_TOKENS, cfg.max_tokens))
            settle([draft], [request], self.ctx.llm.complete_many([request]), self._drafting(f"grammar-{round_}", round_))
            valid = [draft] if draft.valid else []
        return self._best(step, valid)

    def _drafting(self, step: str, round_: int) -> Drafting:
        game = self.ctx.game

        def repair(d: Draft, r: int) -> LLMRequest:
            d.messages = d.messages + [Message("assistant", d.reply.full_text),
                                       Message("user", repair_prompt(d.error, game.policy_class, self.repair_hints))]
            return self.request(f"repair-{round_}-{r}", d.messages, d.extra["sample"])

        def on_round(drafts: Sequence[Draft]) -> None:
            for d in drafts:
                if d.error is not None:
                    self._record(d.keys[-1], step, d.error, None)

        return Drafting(extract=_extractor(game.policy_class), check=self.ctx.check, repair=repair,
                        max_repairs=self.ctx.config.max_repairs, on_round=on_round)

    def _best(self, step: str, valid: Sequence[Draft]) -> Candidate | None:
        """Evaluate the valid drafts new to this call against sigma; the best one (the first
        on ties; a program drawn before is a recorded duplicate and never the best)."""
        best: Candidate | None = None
        for d in valid:
            pid = program_id(d.source)
            if pid in self._played:
                twin = self._played[pid]
                self._record(d.keys[-1], step, None, twin.utility, duplicate_of=twin.key)
                continue
            feedback = self.ctx.evaluate(d.source)
            self._played[pid] = self._record(d.keys[-1], step, None, feedback.utility)
            if best is None or feedback.utility > best.utility:
                best = Candidate(d.source, feedback, tuple(d.keys), d.extra.get("author", MODEL))
        return best

    def _record(self, key: str, step: str, error: str | None, utility: float | None,
                duplicate_of: str | None = None) -> Attempt:
        attempt = Attempt(key, key.split("/")[1], error is None, error, utility, duplicate_of)
        self.attempts.append(attempt)
        self.ctx.log.event(ORACLE_CANDIDATE, dataclasses.asdict(attempt))
        if error is not None:
            self.ctx.log.event(ORACLE_REJECTED, {"key": key, "step": step, "reason": error})
        return attempt


def generation_cost(tally: Tally, config: OracleConfig, scenario: Scenario, prompt: float, completion: float,
                    times: float = 1.0) -> None:
    """``times`` generation steps (``Proposer.generate``) under ``scenario``: the samples, their
    repairs while they fail, and the grammar fallback when all failed."""
    tally.add(times * config.samples, prompt, completion)
    chat = prompt
    for r in range(config.max_repairs):
        chat += completion + ERROR_TOKENS
        tally.add(times * config.samples * scenario.invalid ** (r + 1), chat, completion)
    if config.grammar_fallback:
        all_failed = scenario.invalid ** ((config.max_repairs + 1) * config.samples)
        tally.add(times * all_failed, prompt, min(GRAMMAR_TOKENS, config.max_tokens) * scenario.completion)


def _extractor(class_name: str):
    return lambda _draft, reply: extract_code(reply.full_text, class_name)
