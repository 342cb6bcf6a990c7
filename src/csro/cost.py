"""What a run would cost, with no LLM call made (``csro run CONFIG --estimate``).

Hennes et al. (arXiv 2603.10098) give no cost model; this one is ours. A run's LLM calls are
its best-response calls, each made by the oracle against sigma:

    for k in 1..K, and K + 1 when ``evaluation.br_estimate`` asks for one more:
        for each population p (one in a symmetric game, one per player otherwise):
            oracle.cost(the call of iteration k)          # low / expected / high

so the iterations, the players and the final best response multiply here, in one place,
and what one call costs is declared by the oracle (``csro.oracles.Oracle.cost``) from what
the LLM layer knows (``csro.llm.estimate``: token counts, completions, scenarios).

1. The first prompt is rendered for real: the oracle's own context builder on the initial
   population (sigma_0 is the initial policy), its system message and prefill.
2. A later call's prompt grows by what the loop has added by then: the code opponents of
   the opposing population(s), ``k - 1`` written members each (plus the initial policy where
   it is code). A description is written once per member, whichever call first shows it;
   each population adds at most one member an iteration, so we count one description per
   call from iteration 2 on (and at iteration 1 when the initial policy is code): with
   per-player populations the N members of an iteration are described by the N calls of the
   next, whichever of them writes each.
3. Dollars are tokens times the price (``csro.llm.prices``), every prompt token priced as
   fresh input (cache hits only lower the cost).
"""

from __future__ import annotations

import dataclasses
import math

from csro.config import RunConfig
from csro.evaluation.policy_ref import resolve
from csro.games import load_game
from csro.llm import Message
from csro.llm.estimate import SCENARIOS, Estimate, Tally, completions, counter, model_label, price
from csro.llm.tokens import approx_tokens
from csro.metagame import symmetric
from csro.oracles import CallSize, Opponent, get_oracle, prefill


def estimate_run(config: RunConfig) -> Estimate:
    """The estimate of ``config``; no LLM call is made."""
    llm, oracle_cfg = config.llm, config.oracle
    game = load_game(config.game)
    oracle = get_oracle(oracle_cfg.kind)
    players = 1 if symmetric(game) else game.num_players
    spec = dataclasses.replace(resolve(config.initial_policy, game), name="p0")
    opponent = Opponent("p0", 1.0, spec, spec.builtin.description if spec.builtin else "")
    messages = tuple(oracle.context.messages(game, [opponent], oracle_cfg, None if players == 1 else 0))
    head = prefill(game, oracle_cfg)
    counted_with, count = counter(llm)
    first = count(messages, head)
    outs, invalid, notes = completions(llm, oracle_cfg.max_tokens, game.policy_class)
    rules = count((Message("user", game.rules_text),), "")
    usd = price(llm)
    initial_code = spec.source is not None
    opposing = 1 if players == 1 else players - 1  # populations whose members a call shows
    last = config.iterations + (1 if config.evaluation.br_estimate else 0)
    scenarios, used = {}, []
    for sc in SCENARIOS:
        out = outs[sc.name]
        if invalid is not None and sc.name == "expected":
            sc = dataclasses.replace(sc, invalid=invalid)
        used.append(sc)
        tally = Tally()
        for k in range(1, last + 1):
            size = CallSize(first=first, completion=out, program=out + approx_tokens(head), rules=rules,
                            written=opposing * (k - 1 + initial_code), new=int(k > 1 or initial_code))
            tally.merge(oracle.cost(oracle_cfg, size, sc), times=players)
        tin, tout = math.ceil(tally["tokens_in"]), math.ceil(tally["tokens_out"])
        scenarios[sc.name] = {"calls": math.ceil(tally["calls"]), "tokens_in": tin, "tokens_out": tout,
                              "usd": None if usd is None else usd.cost(tin, tout)}
    return Estimate(llm.provider, model_label(llm), counted_with, first, usd, scenarios, tuple(used), notes)
