"""``oracle.kind: evolve``: the AlphaEvolve-style best-response oracle of CSRO.

Hennes et al. (arXiv 2603.10098) run AlphaEvolve as the oracle, fitness the expected
utility against sigma. What is ours (AlphaEvolve is not public, and open re-implementations
treat fitness as fixed): the archive *carries over* between PSRO iterations. When sigma
changes, the elites of the archive as it stood get only their missing payoff cells played
(against support members they never met, typically the policy the previous iteration
added), and then every program is re-scored as payoff vector . sigma without simulating
anything else (``ProgramDatabase.rescore``). A cold archive (the first iteration, or one
whose elites all vanished) is seeded with the game's example policy.

The chosen best response is the fittest fully evaluated program that is not already a
population member; its lineage (call keys up the parent chain) is recorded with it.
"""

from __future__ import annotations

import dataclasses

from csro.arena import Feedback
from csro.authorship import EXAMPLE, GRAMMAR, MODEL, UNKNOWN
from csro.config import EvolveConfig, OracleConfig
from csro.evaluation import code_policy
from csro.events import EVOLVE_RESCORED
from csro.llm import LLMSession
from csro.llm.estimate import Scenario, Tally

from .._base import Attempt, CallSize, Oracle, OracleContext, OracleResult
from .._context import ContextBuilder
from .._propose import ERROR_TOKENS

from ._database import Program, ProgramDatabase
from ._engine import DIFF_TOKENS, Evolution
from ._policy import PolicyProblem, cell, expected_utility


MUTATION_TOKENS = 80  # scores and the mutation request around the parent's code (cost model)


class Evolve(Oracle):
    """Evolutionary search with islands, MAP-Elites archives and a sandboxed cascade."""

    name = "evolve"
    per_player = False  # its archive is scored against one shared population's sigma
    grammar_author = GRAMMAR  # a rewrite under the grammar: the model chose within it (csro.authorship)

    def __init__(self) -> None:
        self.context = ContextBuilder()
        self.db: ProgramDatabase | None = None

    def best_response(self, ctx: OracleContext) -> OracleResult:
        problem = PolicyProblem(ctx.game, ctx.target, ctx.arena, ctx.config, self.context)
        if self.db is None:
            self._restore(ctx, problem)
        else:
            self._carry_over(ctx, problem)
        engine = Evolution(problem, self.db, self._writer(ctx), self._search(ctx.config.evolve),
                           max_tokens=ctx.config.max_tokens,
                           on_program=lambda p, f: ctx.log.add_program(dataclasses.asdict(p), f),
                           log=ctx.log.event, grammar_author=self.grammar_author)
        if not self.db.elites():
            engine.add_seeds([ctx.game.example_policy])
        stop = engine.run()
        return self._result(ctx, stop)

    def _writer(self, ctx: OracleContext) -> LLMSession:
        """Who writes the mutations: the run's LLM."""
        return ctx.llm

    def _search(self, config: EvolveConfig) -> EvolveConfig:
        """The search's sizes and budgets: the configured ones."""
        return config

    def cost(self, config: OracleConfig, size: CallSize, scenario: Scenario) -> Tally:
        """islands x population x generations mutations (at most ``max_llm_calls``: a generation
        plans no more than the calls left), each with the parent and its inspirations in the
        prompt, and up to ``evolve.repairs`` repairs (full rewrites) of each that fails."""
        ev = config.evolve
        prompt, _ = self.context.prompt_cost(config, size, scenario)
        mutations = ev.islands * ev.population_size * ev.generations
        if ev.max_llm_calls is not None:
            mutations = min(mutations, ev.max_llm_calls)
        chat = prompt + (1 + ev.inspirations) * size.program + MUTATION_TOKENS
        out = scenario.completion * (ev.diff_ratio * min(DIFF_TOKENS, config.max_tokens)
                                     + (1 - ev.diff_ratio) * config.max_tokens)
        tally = Tally()
        tally.add(mutations, chat, out)
        for r in range(ev.repairs):
            chat += out + ERROR_TOKENS
            tally.add(mutations * scenario.invalid ** (r + 1), chat, size.completion)
            out = size.completion
        return tally

    # -- the archive across iterations ------------------------------------------------------
    def _restore(self, ctx: OracleContext, problem: PolicyProblem) -> None:
        """The database as earlier iterations left it (a resumed run reads it from the store)."""
        support = ctx.log.support(ctx.target.iteration - 2)  # what the previous call aimed at
        edges = ctx.config.evolve.length_bins
        self.db = ProgramDatabase(ctx.config.evolve.islands, lambda scores: expected_utility(support, scores),
                                  lambda p: cell(support, p, edges))
        for data in ctx.log.programs(before_iteration=ctx.target.iteration):
            data.pop("fitness", None)
            self.db.add(_program(data))
        self._carry_over(ctx, problem)

    def _carry_over(self, ctx: OracleContext, problem: PolicyProblem) -> None:
        """Play the elites' missing cells against the new sigma's support, then re-score all."""
        elites = self.db.elites()
        missing = self.db.missing(problem.support, elites)
        by_need: dict[tuple[str, ...], list[Program]] = {}
        for p in elites:
            if p.id in missing:
                by_need.setdefault(tuple(missing[p.id]), []).append(p)
        cells = 0
        for names, programs in by_need.items():
            for p, scores in zip(programs, problem.play([p.source for p in programs], names)):
                self.db.update_scores(p.id, scores)
                cells += len(names)
        rescored = self.db.rescore(problem.fitness, problem.descriptor)
        for p in elites:  # stored once, with the new cells and the fitness under the new sigma
            ctx.log.add_program(dataclasses.asdict(p), self.db.fitness(p.id))
        ctx.log.event(EVOLVE_RESCORED, {"programs": rescored, "elites": len(elites), "cells_simulated": cells})

    # -- the answer ---------------------------------------------------------------------------
    def _result(self, ctx: OracleContext, stop: str) -> OracleResult:
        members = {o.spec.sha256 for o in ctx.target.opponents}
        best = self.db.best(exclude=lambda p: code_policy("x", p.source, ctx.game).sha256 in members)
        statuses = self.db.by_status()
        attempts = [Attempt(p.call_key, "evolve", p.status in ("ok", "not_promising"), p.error, self.db.fitness(p.id))
                    for p in self.db.programs.values() if p.iteration == ctx.target.iteration and p.call_key]
        if best is None:
            return OracleResult(None, None, [], f"{self.name}: no new evaluated program ({stop}; {statuses})", attempts)
        fitness = self.db.fitness(best.id)
        support = {o.name for o in ctx.target.support}
        feedback = Feedback(fitness, {n: v for n, v in best.scores.items() if n in support}, {}, (), 0)
        reason = (f"{self.name}: {best.id} ({best.mutation} of {best.parent}) is the fittest of "
                  f"{len(self.db.programs)} programs, u = {fitness:.1f}; stopped by {stop}")
        return OracleResult(best.source, feedback, self._lineage(best), reason, attempts, self._author(best))

    def _author(self, program: Program) -> str:
        """Who wrote the program's source: its own record, a migrant's original; for a program
        stored before authorship was recorded, a seed's is the example and a call's the model."""
        seen, p = set(), program
        while p is not None and p.id not in seen:
            seen.add(p.id)
            if p.author is not None:
                return p.author
            if p.mutation == "seed":
                return EXAMPLE
            if p.call_key:
                return MODEL
            p = self.db.programs.get(p.parent) if p.parent else None
        return UNKNOWN

    def _lineage(self, program: Program) -> list[str]:
        keys, seen, p = [], set(), program
        while p is not None and p.id not in seen:
            seen.add(p.id)
            if p.call_key:
                keys.append(p.call_key)
            p = self.db.programs.get(p.parent) if p.parent else None
        return keys[::-1]


def _program(data: dict) -> Program:
    data = dict(data)
    data["inspirations"] = tuple(data.get("inspirations", ()))
    data["descriptor"] = tuple(data.get("descriptor", ()))
    return Program(**data)
