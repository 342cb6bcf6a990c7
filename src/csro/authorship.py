"""Who wrote a population member's program, and how much of sigma the model wrote.

A CSRO population (Hennes et al., arXiv 2603.10098) is meant to grow by programs an LLM
writes, but not every member is the model's: the loop starts from a built-in or a user's
file, evolve seeds its archive with the game's hand-written worked example, and a proposal
that failed may fall back to a grammar. Issue 26 asks every table to say which, so that a
reader sees what the model added. The authors:

- ``model``: an LLM call wrote the source freely (its key is in the member's ``call_keys``;
  a repair of any draft, and a refinement of any program, is the model's too);
- ``grammar``: an LLM call decoded under the game's grammar (``csro.oracles._grammar``: the
  proposal's fallback, or evolve's grammar-constrained rewrites), so the grammar fixed the
  form and the model chose within it;
- ``example``: the game's example policy (``CodeGame.example_policy``), which evolve seeds
  its archive with and the no-model baseline answers with;
- ``builtin`` / ``file``: the initial policy, a ``builtin:NAME`` or a user's file;
- ``unknown``: a member stored before authorship was recorded that cannot be told apart.

Our reading: a program is *model-written* when an LLM call chose its content, under a grammar
or not (``MODEL_WRITTEN``); the tables keep ``grammar`` apart so that a reader can discount it.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

MODEL = "model"
GRAMMAR = "grammar"
EXAMPLE = "example"
BUILTIN = "builtin"
FILE = "file"
UNKNOWN = "unknown"
AUTHORS = (MODEL, GRAMMAR, EXAMPLE, BUILTIN, FILE, UNKNOWN)
MODEL_WRITTEN = frozenset({MODEL, GRAMMAR})

_SEAT = re.compile(r"^seat\d+-")  # a player's scope before a call key's step (csro.metagame)
_NOT_WRITING = ("describe-", "diagnose-", "repair-")  # steps that do not draw a new program


def initial_author(ref: str | None) -> str:
    """The author of an initial policy: ``builtin`` for a ``builtin:NAME`` (its ``ref``), else ``file``."""
    return BUILTIN if ref is not None else FILE


def stored_author(oracle: str, ref: str | None, call_keys: Sequence[str]) -> str:
    """The author of a member stored before authorship was recorded, from what was stored: the
    initial policy's ``ref``; an oracle's call keys (none: the example, which only evolve
    could answer with; the last writing step a ``grammar-`` one: the fallback). A
    grammar-constrained evolve rewrite is not told apart from a free one (its key does not
    say), so it reads ``model``."""
    if oracle == "initial":
        return initial_author(ref)
    if not call_keys:
        return EXAMPLE if oracle == "evolve" else UNKNOWN
    steps = [_SEAT.sub("", key.split("/")[1]) for key in call_keys]
    writing = [s for s in steps if not s.startswith(_NOT_WRITING)]
    return GRAMMAR if writing and writing[-1].startswith("grammar-") else MODEL


def model_weight(authors: Iterable[str], sigma: Iterable[float]) -> float:
    """sigma's weight on the members the model wrote (``MODEL_WRITTEN``), members and weights
    in the same order."""
    return float(sum(w for a, w in zip(authors, sigma) if a in MODEL_WRITTEN))
