"""Best-response oracles of the CSRO loop: an LLM writes a policy as code against sigma.

Hennes et al., "Code-Space Response Oracles" (arXiv 2603.10098): ``zero_shot`` and
``linear_refinement`` as in the paper; ``reflect`` is the act-observe-rewrite shape of
Kumar (arXiv 2603.04466) applied to games; ``no_model`` is the baseline without the model
(the game's example policy, ``_baseline``) and ``grammar_search`` the search without it
(evolve with every rewrite drawn from the game's grammar, ``evolve._frame``). The LLM oracles share the context builder
(``_context``), the propose → check → repair loop and the grammar fallback (``_propose``
over ``csro.drafting`` and ``csro.extract``; ``_grammar``), and every candidate is checked,
evaluated and traced through the run's ``csro.arena.Arena``; an invalid program is never
returned.
"""

from __future__ import annotations

from csro.registry import ORACLES

from csro.arena import Feedback, Opponent, Target

from ._base import Attempt, CallSize, Oracle, OracleContext, OracleLog, OracleResult
from ._context import prefill
from ._baseline import NoModel
from ._reflect import Reflect
from ._refine import LinearRefinement, ZeroShot
from .evolve import Evolve, GrammarSearch


def get_oracle(kind: str) -> Oracle:
    """A fresh oracle of ``kind``, a row of ``csro.registry.ORACLES`` (one per run: it caches
    opponent descriptions)."""
    return ORACLES.load(kind)()


__all__ = [
    "Attempt", "CallSize", "Evolve", "Feedback", "GrammarSearch", "LinearRefinement", "NoModel", "Opponent", "Oracle", "OracleContext",
    "OracleLog", "OracleResult", "Reflect", "Target", "ZeroShot", "get_oracle", "prefill",
]
