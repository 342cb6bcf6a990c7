"""The paper's oracles: ZeroShot and LinearRefinement.

Hennes et al. (arXiv 2603.10098), section "Oracles":

    pi = LLM(prompt); u = utility of pi against sigma; j = 0
    while u < 0 and j < M:                       # M = 10 in the paper
        j += 1
        pi' = LLM(prompt + pi + its feedback)
        keep pi' only if u(pi') > u(pi)
    return pi

ZeroShot is the same with M = 0.

Our interpretation where the paper is silent:
- The refinement prompt holds the current best program and its feedback (per-opponent
  returns and forfeits), not the whole history of earlier attempts: the embedded model's
  window is 4096 tokens.
- When the first proposal yields no valid program, ``u`` is undefined; we treat it as
  below zero, so refinement rounds (with up to M calls) propose afresh until a valid
  program exists. With none at all the oracle returns ``source=None`` and the loop keeps
  its population.
"""

from __future__ import annotations

from csro.config import OracleConfig
from csro.llm import Message
from csro.llm.estimate import Scenario, Tally

from ._base import CallSize, Oracle, OracleContext, OracleResult
from ._context import ContextBuilder, feedback_text, select_opponents
from ._propose import Candidate, Proposer, generation_cost

FEEDBACK_TOKENS = 40  # the feedback's header and request (cost model), plus PER_OPPONENT_TOKENS each
PER_OPPONENT_TOKENS = 12


class LinearRefinement(Oracle):
    """Propose, then refine while u < 0 and j < M, keeping only improvements."""

    name = "linear_refinement"
    round_step = "refine"

    def __init__(self) -> None:
        self.context = ContextBuilder()  # descriptions cached by policy name for the whole run

    def max_rounds(self, config: OracleConfig) -> int:
        """M: the refinement rounds one call may run."""
        return config.max_refinements

    def best_response(self, ctx: OracleContext) -> OracleResult:
        opponents = select_opponents(ctx.target.opponents, ctx.config.context)
        if ctx.config.context.opponents in ("description", "both"):
            self.context.describe(ctx.game, opponents, ctx.config, ctx.llm)
        messages = self.context.messages(ctx.game, opponents, ctx.config, ctx.target.seat)
        proposer = Proposer(ctx)
        best = proposer.generate("propose", messages, 0, self.context.lineage_keys(opponents))
        j = 0
        while (best is None or best.utility < 0) and j < self.max_rounds(ctx.config):
            j += 1
            new = self.improve(ctx, proposer, messages, best, j, self.context.lineage_keys(opponents))
            if new is not None and (best is None or new.utility > best.utility):
                best = new
        return _result(self.name, best, proposer, j)

    def cost(self, config: OracleConfig, size: CallSize, scenario: Scenario) -> Tally:
        """Descriptions of new opponents, the proposal, then each round that runs (round j runs
        with probability ``scenario.negative ** j``, all M of them under ``high``) with the
        best program and its feedback in its prompt."""
        tally = self.context.describe_cost(config, size, scenario)
        prompt, shown = self.context.prompt_cost(config, size, scenario)
        generation_cost(tally, config, scenario, prompt, size.completion)
        rounds = scenario.rounds(self.max_rounds(config))
        chat = prompt + size.program + FEEDBACK_TOKENS + PER_OPPONENT_TOKENS * (shown + 1)
        chat += self.round_cost(tally, config, scenario, chat, rounds)
        generation_cost(tally, config, scenario, chat, size.completion, times=rounds)
        return tally

    def round_cost(self, tally: Tally, config: OracleConfig, scenario: Scenario, chat: float, rounds: float) -> float:
        """The calls a round makes before its new program (none here); the tokens they add to
        its prompt."""
        return 0.0

    def improve(self, ctx: OracleContext, proposer: Proposer, messages: list[Message], best: Candidate | None,
                j: int, context_keys: list[str]) -> Candidate | None:
        """Round ``j``: a new program from the best one and its feedback (afresh without one)."""
        step = f"{self.round_step}-{j}"
        if best is None:
            return proposer.generate(step, messages, j, context_keys)
        ask = (feedback_text(best.feedback, ctx.target.weights) + "\n\nWrite an improved program that scores "
               "higher against this mixture. Reply with the whole class in one ```python block.")
        return proposer.generate(step, messages + [Message("assistant", fenced(best.source)), Message("user", ask)],
                                 j, best.keys)


class ZeroShot(LinearRefinement):
    """One proposal per iteration (its repairs and grammar fallback included); no refinement."""

    name = "zero_shot"

    def max_rounds(self, config: OracleConfig) -> int:
        return 0


def fenced(source: str) -> str:
    return f"```python\n{source.rstrip()}\n```"


def _result(name: str, best: Candidate | None, proposer: Proposer, rounds: int) -> OracleResult:
    attempts = proposer.attempts
    valid = sum(a.valid for a in attempts)
    if best is None:
        last = next((a.error for a in reversed(attempts) if a.error), "no program was produced")
        reason = f"{name}: no valid program in {len(attempts)} attempts; last error: {last.splitlines()[0]}"
        return OracleResult(None, None, [], reason, attempts)
    reason = (f"{name}: best of {valid} valid of {len(attempts)} programs, u = {best.utility:.1f} "
              f"after {rounds} round(s)")
    return OracleResult(best.source, best.feedback, list(best.keys), reason, attempts, best.author)
