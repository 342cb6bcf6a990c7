"""``oracle.kind: grammar_search``: evolve's search with the model replaced by the grammar.

Issue 40 asks what the model adds inside a grammar frame. Under the embedded model, evolve's
rewrites are decoded under the game's strict grammar (``csro.oracles._grammar``): for RRPS the
model writes only the ``rules()`` body inside a fixed class that plays the rules while they
win (``csro.games.rrps.rule_header``). The no-model baseline (``no_model``) plays the worked
example, so it cannot say whether the model's choices beat the same frame filled without a
model. This oracle fills it without one, at the same budget:

1. the same search as ``evolve`` (``Evolve``: the archive seeded with the example, carried
   over between PSRO iterations, the same cascade of check, quick matches and full
   evaluation against sigma), with the configured ``oracle.evolve`` sizes, so a PSRO
   iteration draws ``islands x population_size x generations`` candidates (at most
   ``max_llm_calls``), as many as a model run of that configuration writes;
2. every mutation is a full rewrite drawn from the grammar (``csro.gbnf.sample``: each
   alternative uniformly, an optional item half the time) inside the game's header, the
   frame the model's grammar-constrained rewrites complete; no diff, no repair (a grammar
   sentence is valid by construction), no LLM call, and each generation evaluated before the
   next is drawn (``overlap`` off; the reproduce configurations have it off for the model too);
3. a draw is seeded by the request's seed, derived from the run seed and the call key the
   model's rewrite would have had, so a resumed or replayed run draws the same programs.

Its programs' author is ``frame`` (``csro.authorship``), the example's stays ``example``.
A game without a strict grammar (``CodeGame.policy_grammar`` is None; Leduc) is refused with
a ``ConfigError``: its fallback skeleton leaves method bodies as free lines that only a model
can fill. Our interpretation: Hennes et al. (arXiv 2603.10098) have no such baseline; the
uniform draw is the simplest search without a model over the same language, not a tuned one.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Sequence

from csro.authorship import FRAME
from csro.config import EvolveConfig, OracleConfig
from csro.errors import ConfigError
from csro.games import CodeGame
from csro.gbnf import Rules, sample
from csro.llm import LLMReply, LLMRequest, LLMSession
from csro.llm.estimate import Scenario, Tally

from .._base import CallSize, OracleContext, OracleResult
from ._database import Program
from ._oracle import Evolve

SAMPLER = "grammar-sampler"  # the provider and model named on a draw's reply (no LLM behind it)


class GrammarSampler:
    """A ``csro.llm.session.Completer`` without a model: each reply is a sentence of ``rules``
    drawn with ``random.Random(request.seed)``, after the request's prefill (the frame)."""

    grammar = True  # the engine then asks every rewrite under the grammar

    def __init__(self, rules: Rules):
        self.rules = rules

    def complete(self, request: LLMRequest) -> LLMReply:
        return LLMReply(request.key, sample(self.rules, random.Random(request.seed)), SAMPLER, SAMPLER,
                        prefill=request.prefill)

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMReply]:
        return [self.complete(r) for r in requests]


def strict_rules(game: CodeGame) -> Rules:
    """The game's strict policy grammar, or ConfigError naming the game that has none."""
    strict = game.policy_grammar()
    if strict is None:
        raise ConfigError(f"oracle.kind: grammar_search needs a game with a strict policy grammar "
                          f"(CodeGame.policy_grammar); {game.name!r} has none, and its skeleton's free method "
                          "bodies can only be written by a model (use no_model for a baseline without one)")
    return strict[1]


class GrammarSearch(Evolve):
    """Evolve with every rewrite drawn from the game's grammar instead of written by the LLM."""

    name = "grammar_search"
    grammar_author = FRAME

    def best_response(self, ctx: OracleContext) -> OracleResult:
        strict_rules(ctx.game)  # refused before anything is played
        return super().best_response(ctx)

    def _writer(self, ctx: OracleContext) -> LLMSession:
        """The run's session (its iteration, seed and scope make the keys) over the sampler."""
        return dataclasses.replace(ctx.llm, client=GrammarSampler(strict_rules(ctx.game)))

    def _search(self, config: EvolveConfig) -> EvolveConfig:
        """The configured sizes and budgets, every mutation a grammar rewrite, no repair, and no
        ``overlap``: there is no LLM to wait for, and with instant draws the planning thread
        parses code while the evaluation thread does, which CPython 3.11's parser does not
        survive (``SystemError: AST constructor recursion depth mismatch``, seen in the tests)."""
        return config.model_copy(update={"diff_ratio": 0.0, "repairs": 0, "rewrite_grammar": True, "overlap": False})

    def _lineage(self, program: Program) -> list[str]:
        """None: no LLM call made the program (its draw's key is its archive record's ``call_key``)."""
        return []

    def cost(self, config: OracleConfig, size: CallSize, scenario: Scenario) -> Tally:
        """No LLM call."""
        return Tally()
