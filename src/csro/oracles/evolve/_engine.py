"""The evolutionary search loop: generations of LLM mutations, evaluated in a cascade.

AlphaEvolve (Novikov et al. 2025), the oracle of Hennes et al. (arXiv 2603.10098) and the
discovery engine of Li et al. (arXiv 2602.16928), is not public; this loop is our design
from its description:

- A generation draws, on every island, ``population_size`` (parent, inspirations, mutation)
  triples from the database (seeded by the run seed and the program's position, so a run
  is reproducible and a resumed run re-walks the same steps) and sends all their prompts at
  once (``complete_many``: the LLM layer keeps ``llm.concurrency`` calls in flight).
- A mutation is a SEARCH/REPLACE diff of the parent (``_diff``, applied strictly) or a full
  rewrite (with the problem's prefill, and for the embedded model a GBNF grammar so that a
  0.5B model still writes valid programs). A rewrite under the grammar is sampled at
  ``grammar_temperature`` (our choice, issue 26): every sample is valid there, and at the run's
  temperature most samples of one prompt were the same program.
- The cascade: stage 1 compile and smoke test, stage 2 a few matches (``quick``), stage 3
  the full evaluation only for programs whose quick fitness reaches the island's
  ``cascade_quantile`` of elite fitness (or whose island has no elite yet).
- With ``overlap``, generation g is evaluated while the LLM writes generation g + 1, whose
  parents therefore come from the database as of generation g - 1 (a fixed lag, so the
  result does not depend on timing).
- Every ``migration_interval`` generations the islands' best move along the ring.
- Budgets (LLM calls, full evaluations, wall time) end the search early; which one ended
  it is logged.

Every program, failed ones included, goes to ``on_program`` (the run store) when it is
complete, with its lineage, diff, call key and scores.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import random
import time
from typing import Callable, Sequence

import numpy as np

from csro.authorship import EXAMPLE, GRAMMAR, MODEL
from csro.config import EvolveConfig
from csro.drafting import Draft, Drafting, mend, repair_prompt, settle
from csro.extract import Extracted, extract_code, program_id
from csro.events import EVOLVE_GENERATION, EVOLVE_SEED_REJECTED, EVOLVE_STOPPED
from csro.llm import LLMReply, LLMRequest, LLMSession, Message
from csro.seeding import derive_seed


from ._database import FULL, Program, ProgramDatabase
from ._diff import DIVIDER, REPLACE, SEARCH, DiffError, apply_diff
from ._problem import Problem

DIFF_TOKENS = 512  # an edit is short; a rewrite gets the configured max_tokens


@dataclasses.dataclass
class Budget:
    """What one search may spend; ``spent`` says what it did."""

    llm_calls: int | None
    evaluations: int | None
    wall_seconds: float | None
    started: float = dataclasses.field(default_factory=time.monotonic)
    calls: int = 0
    full_evaluations: int = 0

    def exhausted(self) -> str | None:
        if self.llm_calls is not None and self.calls >= self.llm_calls:
            return "llm_calls"
        if self.evaluations is not None and self.full_evaluations >= self.evaluations:
            return "evaluations"
        if self.wall_seconds is not None and time.monotonic() - self.started >= self.wall_seconds:
            return "wall_seconds"
        return None

    def calls_left(self) -> int | None:
        return None if self.llm_calls is None else max(0, self.llm_calls - self.calls)


@dataclasses.dataclass
class _Slot:
    """One planned mutation of a generation."""

    island: int
    index: int
    parent: Program
    inspirations: list[Program]
    mutation: str
    step: str  # the call key's step (unscoped), e.g. evolve-0-1; its repairs are repair-STEP-R
    request: LLMRequest


class Evolution:
    """Runs generations of one search over ``db`` (see the module docstring).

    Args:
      problem: what is evolved and how it is scored.
      db: the program database (it may already hold earlier iterations' programs).
      llm: the LLM session; its iteration is the first field of every call key and program
        id (the PSRO iteration; 0 in discovery runs), its seed the run seed, and its
        provider's grammar support decides whether rewrites are grammar-constrained.
      config: the search's sizes and budgets.
      max_tokens: of a rewrite (a diff gets at most ``DIFF_TOKENS``).
      on_program: called with each finished program (to store it).
      log: records an event ``(kind, data)``.
      grammar_author: the author of a grammar-constrained rewrite (``csro.authorship``):
        ``grammar`` for a model's, ``frame`` for the grammar sampled without one
        (``csro.oracles.evolve._frame``).
    """

    def __init__(self, problem: Problem, db: ProgramDatabase, llm: LLMSession, config: EvolveConfig, *,
                 max_tokens: int, on_program: Callable[[Program, float | None], None],
                 log: Callable[[str, dict], None], grammar_author: str = GRAMMAR):
        self.problem = problem
        self.db = db
        self.llm = llm
        self.config = config
        self.iteration = llm.iteration
        self.max_tokens = max_tokens
        self.on_program = on_program
        self.log = log
        self.grammar_author = grammar_author
        self.budget = Budget(config.max_llm_calls, config.max_evaluations, config.wall_seconds)
        # program_id -> full scores, so a repeated program (up to layout, comments and docstrings) is not re-evaluated
        self._scored: dict[str, dict] = {}
        for p in db.programs.values():
            if p.evaluated:
                self._scored.setdefault(program_id(p.source), p.scores)

    # -- seeds ------------------------------------------------------------------------------------
    def add_seeds(self, sources: Sequence[str], author: str = EXAMPLE) -> None:
        """Evaluate the starting programs fully and place a copy on every island; ``author``
        wrote them (``csro.authorship``; a game's example or a problem's seed by default)."""
        errors = self.problem.check(sources)
        valid = [s for s, e in zip(sources, errors) if e is None]
        for e in errors:
            if e is not None:
                self.log(EVOLVE_SEED_REJECTED, {"error": e})
        quick = self.problem.quick(valid) if valid else []
        scores = self._full(valid)
        for k, (source, q, sc) in enumerate(zip(valid, quick, scores)):
            for island in range(self.db.islands):
                program = Program(id=f"seed{self.iteration}.{k}.{island}", iteration=self.iteration, generation=-1,
                                  island=island, source=source, mutation="seed", status="seed", stage=FULL,
                                  scores=dict(sc), info={"quick": {"scores": q, "fitness": self.problem.fitness(q)}},
                                  author=author)
                self._finish(program)

    # -- generations --------------------------------------------------------------------------------
    def run(self) -> str:
        """Run the configured generations (or until a budget ends); returns why it stopped."""
        cfg = self.config
        stop = "generations"
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="evolve-eval") if cfg.overlap else None
        pending: concurrent.futures.Future | None = None
        try:
            for g in range(cfg.generations):
                reason = self.budget.exhausted()
                if reason:
                    stop = reason
                    break
                slots = self._plan(g)
                if not slots:
                    stop = "llm_calls" if self.budget.calls_left() == 0 else "no_parent"
                    break
                replies = self.llm.complete_many([s.request for s in slots])
                self.budget.calls += len(slots)
                if pending is not None:
                    self._after(pending.result())
                if pool is not None:
                    pending = pool.submit(self._evaluate, g, slots, replies)
                else:
                    self._after(self._evaluate(g, slots, replies))
            if pending is not None:
                self._after(pending.result())
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        self.log(EVOLVE_STOPPED, {"reason": stop, "llm_calls": self.budget.calls,
                                    "evaluations": self.budget.full_evaluations,
                                    "seconds": time.monotonic() - self.budget.started})
        return stop

    def _after(self, done: tuple[int, list[Program], int]) -> None:
        """A generation's evaluation is in: its repair calls are counted, its programs enter
        the database (in the calling thread, so planning never sees a half-added generation),
        then migration and a summary."""
        generation, programs, repair_calls = done
        self.budget.calls += repair_calls
        for p in programs:
            self._finish(p)
        if (generation + 1) % self.config.migration_interval == 0:
            for migrant in self.db.migrants(self.iteration, generation):
                self._finish(migrant)
        mine = [p for p in self.db.programs.values() if p.iteration == self.iteration and p.generation == generation]
        best = self.db.best()
        self.log(EVOLVE_GENERATION, {
            "generation": generation, "programs": len(mine),
            "valid": sum(p.status in ("ok", "not_promising") for p in mine),
            "statuses": dict(collections.Counter(p.status for p in mine if p.mutation != "migrant")),
            "best_fitness": self.db.fitness(best.id) if best else None, "best": best.id if best else None,
            "archive": {i: len(self.db.archive(i)) for i in range(self.db.islands)}})

    def _plan(self, g: int) -> list[_Slot]:
        cfg = self.config
        slots: list[_Slot] = []
        left = self.budget.calls_left()
        for island in range(self.db.islands):
            for index in range(cfg.population_size):
                if left is not None and len(slots) >= left:
                    return slots
                rng = random.Random(derive_seed(self.llm.seed, "evolve", self.iteration, g, island, index))
                parent = self.db.sample_parent(island, rng, cfg.exploit)
                if parent is None:
                    continue
                inspirations = self.db.sample_inspirations(island, parent, rng, cfg.inspirations)
                mutation = "diff" if rng.random() < cfg.diff_ratio else "rewrite"
                step = f"evolve-{g}-{island}"
                slots.append(_Slot(island, index, parent, inspirations, mutation, step,
                                   self._request(step, index, parent, inspirations, mutation)))
        return slots

    def _request(self, step: str, index: int, parent: Program, inspirations: list[Program], mutation: str) -> LLMRequest:
        messages = self.problem.task_messages() + [Message("user", self._ask(parent, inspirations, mutation))]
        prefill_text, grammar = ("", None)
        if mutation == "rewrite":
            prefill_text, grammar = self.problem.rewrite_hints(self.llm.grammar and self.config.rewrite_grammar)
        return self.llm.request(step, messages, index, prefill=prefill_text, grammar=grammar,
                                temperature=self.config.grammar_temperature if grammar else None,
                                stop=() if grammar or mutation == "diff" else ("\n```",),
                                max_tokens=min(DIFF_TOKENS, self.max_tokens) if mutation == "diff" else self.max_tokens)

    def _ask(self, parent: Program, inspirations: list[Program], mutation: str) -> str:
        """The mutation request: parent with its scores, inspirations, and what to reply."""
        fitness = self.db.fitness(parent.id)
        parts = [f"The current program (fitness {fitness:.3f}; higher is better):",
                 f"```python\n{parent.source.rstrip()}\n```", self.problem.scores_text(parent.scores)]
        for p in inspirations:
            parts += [f"\nAnother program for inspiration (fitness {self.db.fitness(p.id):.3f}):",
                      f"```python\n{p.source.rstrip()}\n```"]
        if mutation == "diff":
            parts.append(
                "\nImprove the current program with one or a few small edits. Write each edit as\n"
                f"{SEARCH}\n<lines copied exactly from the current program>\n{DIVIDER}\n<their replacement>\n{REPLACE}\n"
                "The SEARCH lines must appear exactly once in the current program. Reply with the edit blocks only.")
        else:
            parts.append(f"\nWrite an improved version: the whole class {self.problem.class_name} in one ```python block.")
        return "\n".join(parts)

    # -- the cascade ------------------------------------------------------------------------------
    def _evaluate(self, g: int, slots: Sequence[_Slot], replies: Sequence[LLMReply]) -> tuple[int, list[Program], int]:
        """The cascade over one generation's replies (after up to ``repairs`` rounds of sending
        the broken ones back); reads the database, never writes it. Returns the generation,
        its programs and the number of repair calls made."""
        programs = [self._draft(g, s) for s in slots]
        drafts = [Draft(list(s.request.messages),
                        extra={"slot": s, "mutation": s.mutation}) for s in slots]
        drafting = Drafting(extract=self._extract, check=self._check_new, repair=self._repair,
                            max_repairs=self.config.repairs)
        settle(drafts, [s.request for s in slots], replies, drafting)
        diffs = [d.reply.text if d.extra["mutation"] == "diff" and d.reply.ok else None for d in drafts]
        mend(self.llm.complete_many, drafts, drafting)
        for p, d, diff in zip(programs, drafts, diffs):
            p.source, p.diff = d.source, diff
            if len(d.keys) > 1:  # the source is the last (free) repair's class, not the parent with the diff
                p.diff, p.info["repairs"], p.author = None, d.keys[1:], MODEL
            if d.error is not None:
                p.status = "llm_error" if not d.reply.ok else "invalid" if d.source is not None else \
                    "apply_failed" if d.extra["mutation"] == "diff" else "no_code"
                p.error = d.reply.error if not d.reply.ok else d.error
        first: dict[str, Program] = {}  # one evaluation per distinct new program (program_id)
        for p in programs:
            if p.status == "ok" and program_id(p.source) not in self._scored:
                first.setdefault(program_id(p.source), p)
        stage1 = list(first.values())
        for p in stage1:
            p.stage = 1
        if stage1:
            quick = self.problem.quick([p.source for p in stage1])
            promising = []
            for p, sc in zip(stage1, quick):
                p.stage = 2
                f = self.problem.fitness(sc)
                p.info["quick"] = {"scores": sc, "fitness": f}
                if self._promising(p.island, f):
                    promising.append(p)
                else:
                    p.status = "not_promising"
            left = None if self.budget.evaluations is None else max(0, self.budget.evaluations - self.budget.full_evaluations)
            if left is not None and len(promising) > left:
                for p in promising[left:]:
                    p.status, p.error = "not_promising", "the evaluation budget is spent"
                promising = promising[:left]
            for p, sc in zip(promising, self._full([p.source for p in promising])):
                p.stage, p.scores = FULL, dict(sc)
                if self.problem.fitness(sc) is None:
                    p.status, p.error = "eval_failed", "the full evaluation gave no score on some component"
        for p in programs:  # repeats take the outcome of their first copy, or of an earlier program
            pid = program_id(p.source) if p.status == "ok" else None
            if pid is None or p.stage == FULL or first.get(pid) is p:
                continue
            if pid in first:
                twin = first[pid]
                p.status, p.stage, p.error, p.scores = twin.status, twin.stage, twin.error, dict(twin.scores)
                p.info = dict(twin.info)
            elif pid in self._scored:
                p.stage, p.scores = FULL, dict(self._scored[pid])
        return g, programs, sum(len(d.keys) - 1 for d in drafts)

    def _extract(self, draft: Draft, reply: LLMReply) -> Extracted:
        """A diff applied strictly to the parent, or a rewrite's (or a repair's) class."""
        if draft.extra["mutation"] == "diff":
            try:
                return Extracted(apply_diff(draft.extra["slot"].parent.source, reply.text))
            except DiffError as exc:
                return Extracted(None, str(exc))
        return extract_code(reply.full_text, self.problem.class_name)

    def _repair(self, draft: Draft, r: int) -> LLMRequest:
        """The broken program sent back with its error (and advice); the reply is a whole
        class, also for a diff (a repair is a rewrite), free of the grammar."""
        slot = draft.extra["slot"]
        draft.messages = draft.messages + [Message("assistant", draft.reply.full_text),
                                           Message("user", repair_prompt(draft.error, self.problem.class_name))]
        draft.extra["mutation"] = "rewrite"
        return self.llm.request(f"repair-{slot.step}-{r}", draft.messages, slot.index,
                                prefill=self.problem.rewrite_hints(False)[0], stop=("\n```",),
                                max_tokens=self.max_tokens)

    def _check_new(self, sources: Sequence[str]) -> list[str | None]:
        """Cascade stage 1, once per distinct program never scored before (others pass)."""
        ids = [program_id(s) for s in sources]
        fresh = {i: s for i, s in zip(ids, sources) if i not in self._scored}
        errors = dict(zip(fresh, self.problem.check(list(fresh.values())))) if fresh else {}
        return [errors.get(i) for i in ids]

    def _full(self, sources: Sequence[str]) -> list[dict]:
        if not sources:
            return []
        self.budget.full_evaluations += len(sources)
        scores = self.problem.full(sources)
        for s, sc in zip(sources, scores):
            self._scored[program_id(s)] = sc
        return scores

    def _promising(self, island: int, quick_fitness: float | None) -> bool:
        """Stage 2 passes at the island's ``cascade_quantile`` of elite fitness, compared on the
        full fitness when the problem's quick scores share its scale, else on the elites' own
        stage-2 fitness."""
        if quick_fitness is None:
            return False
        elites = self.db.elites(island)
        if self.problem.quick_comparable:
            elite = [self.db.fitness(p.id) for p in elites]
        else:
            elite = [f for p in elites if (f := (p.info.get("quick") or {}).get("fitness")) is not None]
        if not elite:
            return True
        return quick_fitness >= float(np.quantile(elite, self.config.cascade_quantile))

    def _draft(self, g: int, slot: _Slot) -> Program:
        """The record of the program a slot's reply makes, before extraction and evaluation."""
        return Program(id=f"e{self.iteration}.{g}.{slot.island}.{slot.index}", iteration=self.iteration, generation=g,
                       island=slot.island, source=None, parent=slot.parent.id,
                       inspirations=tuple(i.id for i in slot.inspirations), mutation=slot.mutation,
                       call_key=str(slot.request.key), author=self.grammar_author if slot.request.grammar else MODEL)

    def _finish(self, program: Program) -> None:
        program.descriptor = tuple(self.problem.descriptor(program)) if program.evaluated else ()
        self.db.add(program)
        fitness = self.db.fitness(program.id)
        program.info["fitness_at_birth"] = fitness
        self.on_program(program, fitness)

