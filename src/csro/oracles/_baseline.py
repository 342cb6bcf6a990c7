"""``no_model``: the best-response oracle with the model's proposals switched off.

Issue 26 asks every table to show what the model added. A search oracle with no LLM keeps
only its seeds: evolve seeds its archive with the game's example policy
(``CodeGame.example_policy``, the worked example every oracle's prompt shows), so without
the model its best response is that example while it is not a member, and nothing new
after. This oracle is exactly that, for any seat: it answers the example (checked in the
sandbox and evaluated against sigma like any candidate, no LLM call), and the loop adds it
once (a later answer is a duplicate of the member, ``csro.psro``). ``csro reproduce`` runs it
as the baseline row beside the model's (``csro.reproduce``).

Our interpretation: the paper (Hennes et al., arXiv 2603.10098) has no such baseline; its
nearest row, "CSRO ZeroShot, no opponent input", still calls the model.
"""

from __future__ import annotations

from csro.authorship import EXAMPLE
from csro.config import OracleConfig
from csro.llm.estimate import Scenario, Tally

from ._base import CallSize, Oracle, OracleContext, OracleResult
from ._context import ContextBuilder


class NoModel(Oracle):
    """The game's example policy as every best response; never calls the LLM."""

    name = "no_model"

    def __init__(self) -> None:
        self.context = ContextBuilder()  # the prompt an LLM oracle would be given (``csro.cost`` measures it)

    def best_response(self, ctx: OracleContext) -> OracleResult:
        source = ctx.game.example_policy
        [error] = ctx.check([source])
        if error is not None:
            return OracleResult(None, None, [], f"no_model: the game's example policy fails its check: {error}", [])
        return OracleResult(source, ctx.evaluate(source), [], "no_model: the game's example policy (no LLM call)", [],
                            EXAMPLE)

    def cost(self, config: OracleConfig, size: CallSize, scenario: Scenario) -> Tally:
        """No LLM call."""
        return Tally()
