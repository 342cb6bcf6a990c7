"""``reflect``: the act-observe-rewrite (AOR) shape of a refinement oracle.

Kumar, "Act-Observe-Rewrite" (arXiv 2603.04466), rewrites a whole controller class between
episodes: act (run it), observe (structured outcomes and key frames, kept in an episodic
memory), diagnose first (the failure mode, the root-cause location, the single most
important change), then rewrite; compile-check in a sandbox and roll back to the last
working controller when a rewrite fails. Applied to the CSRO loop (Hennes et al., arXiv
2603.10098), one round j of refinement is:

    act:      the current best program's Feedback against sigma (Arena.evaluate, cached)
    observe:  per-opponent returns and forfeits, plus a few rounds of one traced match
              against the opponent it did worst against (Arena.trace), plus the
              memory of earlier rounds (their u and diagnosis)
    diagnose: call ``diagnose-<j>``: failure mode, where in the code, the one change; no code
    rewrite:  call ``rewrite-<j>`` with the diagnosis (repairs and grammar fallback as ever)
    keep the rewrite only if it scores higher (else roll back to the best)

with the stopping rule of LinearRefinement (while u < 0 and j < M).

Our interpretation: the "key moments" of a match are its first rounds and a stretch of
rounds from its last fifth (where an adaptive opponent has learned the program), each
line cut short; a failed diagnosis call does not stop the round (the rewrite is asked for
without one).
"""

from __future__ import annotations

import re

from csro.config import OracleConfig
from csro.events import ORACLE_DIAGNOSIS
from csro.llm import Message
from csro.llm.estimate import Scenario, Tally

from ._base import OracleContext, OracleResult
from ._context import feedback_text
from ._propose import Candidate, Proposer
from ._refine import LinearRefinement, fenced

FIRST_ROUNDS = 3
LATE_ROUNDS = 6
LINE_CHARS = 160
DIAGNOSIS_TOKENS = 300
OBSERVATION_TOKENS = 250  # outcomes, key moments and memory of the diagnosis prompt (cost model)
MEMORY = 3
_OBS = re.compile(r" +obs=[^|]*?(?= \| |$)")

DIAGNOSE = ("Before changing anything, diagnose. Answer in three short numbered lines, no code:\n"
            "1. Failure mode: what the opponents do that beats this program.\n"
            "2. Where: the part of the code responsible.\n"
            "3. The one change that would help most.")
REWRITE = ("Now rewrite the program, applying that change. Reply with the whole class in one "
           "```python block.")


class Reflect(LinearRefinement):
    """Act, observe, diagnose, rewrite; keep the best, roll back on failure."""

    name = "reflect"
    round_step = "rewrite"

    def __init__(self) -> None:
        super().__init__()
        self.memory: list[str] = []  # episodic memory of the current best-response call

    def best_response(self, ctx: OracleContext) -> OracleResult:
        self.memory = []
        return super().best_response(ctx)

    def round_cost(self, tally: Tally, config: OracleConfig, scenario: Scenario, chat: float, rounds: float) -> float:
        """Each round's diagnosis call, after the observation; the rewrite sees both."""
        diagnosis = min(DIAGNOSIS_TOKENS, config.max_tokens) * scenario.completion
        tally.add(rounds, chat + OBSERVATION_TOKENS, diagnosis)
        return OBSERVATION_TOKENS + diagnosis

    def improve(self, ctx: OracleContext, proposer: Proposer, messages: list[Message], best: Candidate | None,
                j: int, context_keys: list[str]) -> Candidate | None:
        if best is None:
            return super().improve(ctx, proposer, messages, best, j, context_keys)
        observation = observe(ctx, best, j)
        if self.memory:
            observation += "\n\nEarlier rounds:\n" + "\n".join(self.memory[-MEMORY:])
        chat = messages + [Message("assistant", fenced(best.source)), Message("user", observation + "\n\n" + DIAGNOSE)]
        request = proposer.request(f"diagnose-{j}", chat, prefill_text="", stop=(),
                                   max_tokens=min(DIAGNOSIS_TOKENS, ctx.config.max_tokens))
        reply = ctx.llm.complete(request)
        diagnosis = reply.text.strip() if reply.ok else ""
        ctx.log.event(ORACLE_DIAGNOSIS, {"key": str(request.key), "diagnosis": diagnosis, "error": reply.error})
        if diagnosis:
            chat = chat + [Message("assistant", diagnosis), Message("user", REWRITE)]
            keys = best.keys + (str(request.key),)
        else:
            chat = chat[:-1] + [Message("user", observation + "\n\n" + REWRITE)]
            keys = best.keys
        new = proposer.generate(f"rewrite-{j}", chat, j, keys)
        summary = diagnosis.splitlines()[0][:LINE_CHARS] if diagnosis else "(no diagnosis)"
        outcome = "no valid rewrite" if new is None else f"rewrite scored {new.utility:.1f}"
        self.memory.append(f"- round {j}: u was {best.utility:.1f}; diagnosis: {summary}; {outcome}")
        return new


def observe(ctx: OracleContext, best: Candidate, j: int) -> str:
    """Structured outcomes of the best program plus key moments of its worst match."""
    text = feedback_text(best.feedback, ctx.target.weights)
    worst = min(best.feedback.per_opponent, key=best.feedback.per_opponent.get, default=None)
    opponent = next((o for o in ctx.target.opponents if o.name == worst), None)
    if opponent is None:
        return text
    trace = ctx.arena.trace(best.source, opponent, "observe", ctx.target.iteration, j)
    lines = trace.lines
    late = max(FIRST_ROUNDS, len(lines) - len(lines) // 5)
    moments = lines[:FIRST_ROUNDS] + ["..."] + lines[late:late + LATE_ROUNDS]
    if not ctx.game.trace_observations:
        moments = [_OBS.sub("", ln) for ln in moments]
    moments = [ln if len(ln) <= LINE_CHARS else ln[:LINE_CHARS - 1] + "…" for ln in moments]
    return (f"{text}\n\nKey moments of one match against {worst} (you are seat 0, "
            f"final returns {trace.result.returns}):\n" + "\n".join(moments))
