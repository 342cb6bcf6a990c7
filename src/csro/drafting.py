"""Propose → check → repair: the one loop that turns LLM replies into valid programs.

Every application that has an LLM write code runs the same steps: draw replies, take the
program out of each (a fenced class, an applied diff, ...), check the programs in the
sandbox, and send each broken one back with its error for another try, up to a limit.
Hennes et al. (arXiv 2603.10098) only say weak models write invalid code; Kumar
(arXiv 2603.04466) compile-checks each rewrite before running it. The repair loop is our
design, shared by the CSRO oracles (``csro.oracles``), the evolutionary search
(``csro.oracles.evolve``, where a mutation gets no repair by default) and the robot
controllers (``csro.robots``). What differs between them — how a program is extracted,
checked and sent back, and what is recorded — is passed in as ``Drafting``.

Rules: a failed provider call is not repaired (the client has already retried it); the
programs of one round are checked together (one sandbox batch); a repair keeps the sample
index of its draft, so call keys stay stable and a recorded run replays.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Sequence

from csro.extract import Extracted
from csro.llm import LLMReply, LLMRequest, Message


@dataclasses.dataclass
class Draft:
    """One program being written.

    Attributes:
      messages: the chat that produced the latest reply.
      keys: the call keys of every reply so far (``str(CallKey)``).
      reply: the latest reply.
      source: the program extracted from it (None when there is none).
      error: why it is not (yet) a valid program; None once it passed the check.
      said: what the reply said besides its program (e.g. a diagnosis), if anything.
      extra: the caller's own data about the draft (e.g. the mutation it answers).
    """

    messages: list[Message]
    keys: list[str] = dataclasses.field(default_factory=list)
    reply: LLMReply | None = None
    source: str | None = None
    error: str | None = None
    said: str | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.source is not None and self.error is None

    @property
    def repairable(self) -> bool:
        """Broken, but the model answered: worth sending back with the error."""
        return self.error is not None and self.reply is not None and self.reply.ok


@dataclasses.dataclass(frozen=True)
class Drafting:
    """What one kind of program needs of the loop.

    Attributes:
      extract: (draft, reply) -> the program in the reply.
      check: sources -> None for each valid one, else its error (sandboxed; one batch).
      repair: (draft, repair round r) -> the request that sends the draft back with its
        error; it also extends ``draft.messages`` with the exchange (needed when
        ``max_repairs`` > 0).
      max_repairs: repair rounds after the first draw.
      on_round: called with the drafts of each round once they are checked (to record them).
    """

    extract: Callable[[Draft, LLMReply], Extracted]
    check: Callable[[Sequence[str]], list[str | None]]
    repair: Callable[[Draft, int], LLMRequest] | None = None
    max_repairs: int = 0
    on_round: Callable[[Sequence[Draft]], None] = lambda drafts: None


def settle(drafts: Sequence[Draft], requests: Sequence[LLMRequest], replies: Sequence[LLMReply],
           drafting: Drafting) -> None:
    """Take one round of replies into their drafts: extract each program, check them together."""
    for d, request, reply in zip(drafts, requests, replies):
        d.reply = reply
        d.keys.append(str(request.key))
        if not reply.ok:
            d.source, d.error = None, f"LLM call failed: {reply.error}"
            continue
        extracted = drafting.extract(d, reply)
        d.source, d.error = extracted.source, extracted.error
        d.said = extracted.said or d.said
    pending = [d for d in drafts if d.source is not None and d.error is None]
    for d, error in zip(pending, drafting.check([d.source for d in pending])):
        d.error = error
    drafting.on_round(drafts)


def write(complete_many: Callable[[Sequence[LLMRequest]], list[LLMReply]], drafts: Sequence[Draft],
          requests: Sequence[LLMRequest], drafting: Drafting) -> Sequence[Draft]:
    """Draw ``requests`` (one per draft), then repair the broken drafts up to
    ``drafting.max_repairs`` rounds; returns the drafts (``valid`` tells which made it)."""
    settle(drafts, requests, complete_many(requests), drafting)
    return mend(complete_many, drafts, drafting)


def mend(complete_many: Callable[[Sequence[LLMRequest]], list[LLMReply]], drafts: Sequence[Draft],
         drafting: Drafting) -> Sequence[Draft]:
    """Send the broken drafts back with their errors, up to ``drafting.max_repairs`` rounds
    (for drafts whose first replies were settled elsewhere, e.g. a search's generation)."""
    for r in range(drafting.max_repairs if drafting.repair is not None else 0):
        broken = [d for d in drafts if d.repairable]
        if not broken:
            break
        requests = [drafting.repair(d, r) for d in broken]
        settle(broken, requests, complete_many(requests), drafting)
    return drafts


# Error-specific advice for a repair, by the last line of a Python error (our lever for small
# models, measured in bench/valid_rate.py): general Python failure modes, nothing game-specific.
HINTS: tuple[tuple[str, str], ...] = (
    (r"NameError: name '(\w+)' is not defined",
     "`{0}` is used but never defined: define it (a constant above the class, or set self.{0} in "
     "__init__ and write self.{0} where you use it)."),
    (r"AttributeError: '\w+' object has no attribute '(\w+)'",
     "self.{0} is used but never set: set self.{0} in __init__, before any method reads it."),
    (r"TypeError: \w+\.__init__\(\)",
     "The runner creates the object with no arguments: __init__ must take only self."),
    (r"KeyError: (.+)$",
     "Key {0} is missing: read only the fields the API documents, and set every dictionary entry "
     "before reading it."),
    (r"\n\s+raise \w",
     "Never raise: handle every observation the API documents and return a legal value."),
    (r"(\w+) returned NoneType",
     "{0} returned None: every path through it must end with a return of a legal value."),
    (r"illegal action",
     "Return only the legal values the API lists, spelled exactly as it spells them."),
    (r"SyntaxError",
     "Write the complete class again, every block indented and closed."),
)


def repair_hint(error: str) -> str | None:
    """The advice for ``error`` (see ``HINTS``), or None when no rule matches."""
    last = error.strip().splitlines()[-1] if error.strip() else ""
    for pattern, advice in HINTS:
        match = re.search(pattern, last) or re.search(pattern, error)
        if match:
            return advice.format(*match.groups())
    return None


def repair_prompt(error: str, class_name: str, hints: bool = True) -> str:
    """The message that sends a failed program back with its error (and, with ``hints``,
    the advice for that kind of error)."""
    hint = repair_hint(error) if hints else None
    return (f"That program is not valid: {error}\n" + (f"{hint}\n" if hint else "") +
            f"Fix it. Reply with the whole corrected class {class_name} in one ```python block.")
