"""Who wrote a population member's program, and sigma's weight on each kind of author.

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
- ``frame``: the grammar without a model (``grammar_search``, ``csro.oracles.evolve._frame``):
  a sentence drawn at random from the same grammar, inside the same fixed frame, with no
  LLM call, so what ``grammar`` adds over it is the model's choices;
- ``example``: the game's example policy (``CodeGame.example_policy``), which evolve seeds
  its archive with and the no-model baseline answers with;
- ``builtin`` / ``file``: the initial policy, a ``builtin:NAME`` or a user's file;
- ``unknown``: a member stored before authorship was recorded that cannot be told apart.

Issue 40: the tables give sigma's weight per kind (``weight_by_author``) rather than one
"model-written" figure, since under a grammar the model wrote only the choices inside our
frame (for RRPS, the ``rules()`` body inside a guarded class). ``MODEL_WRITTEN`` (``model``
and ``grammar``: an LLM call chose the content) is kept for the summaries that already
report it (``sigma_model_written``).
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

MODEL = "model"
GRAMMAR = "grammar"
FRAME = "frame"
EXAMPLE = "example"
BUILTIN = "builtin"
FILE = "file"
UNKNOWN = "unknown"
AUTHORS = (MODEL, GRAMMAR, FRAME, EXAMPLE, BUILTIN, FILE, UNKNOWN)
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


def weight_by_author(authors: Iterable[str], sigma: Iterable[float]) -> dict[str, float]:
    """sigma's weight on each kind of author, every kind of ``AUTHORS`` present (0.0 where
    none), members and weights in the same order; an author outside ``AUTHORS`` counts as
    ``unknown``."""
    out = dict.fromkeys(AUTHORS, 0.0)
    for a, w in zip(authors, sigma):
        out[a if a in out else UNKNOWN] += float(w)
    return out


def mean_weights(weights: Sequence[dict[str, float]]) -> dict[str, float]:
    """The mean of several ``weight_by_author`` mappings (players of a run, seeds of a grid), a
    kind missing from one counting 0.0 there."""
    return {a: sum(w.get(a, 0.0) for w in weights) / len(weights) for a in weights[0]}


def by_author_text(weights: dict[str, float]) -> str:
    """``model 0.00, grammar 1.00, ...``: the kinds that carry weight, in ``AUTHORS`` order
    (``-`` when none does)."""
    return ", ".join(f"{a} {w:.2f}" for a, w in weights.items() if w > 0) or "-"
