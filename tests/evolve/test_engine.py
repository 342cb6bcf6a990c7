"""The search loop over a fake problem: cascade, statuses, budgets, migration, determinism.

Only our own logic is faked here (a problem whose score is written in the program); the
real sandbox, LLM providers and games are exercised in test_evolve_runs.py."""

import itertools
import re

import pytest

from csro.config import EvolveConfig
from csro.llm import LLMReply, LLMSession
from csro.oracles.evolve import Evolution, Program, ProgramDatabase


def prog(v: float, extra: str = "") -> str:
    return f"class Agent:\n    value = {v}  # v\n{extra}"


class FakeProblem:
    class_name = "Agent"
    quick_comparable = True

    def __init__(self):
        self.checked, self.quicked, self.fulled = [], [], []

    def fitness(self, scores):
        return scores.get("a")

    def descriptor(self, program):
        return (len(program.source) % 2,)

    def task_messages(self):
        from csro.llm import Message
        return [Message("system", "be good")]

    def scores_text(self, scores):
        return f"a = {scores.get('a')}"

    def _value(self, source):
        return float(re.search(r"value = (-?[0-9.]+)", source).group(1))

    def check(self, sources):
        self.checked += sources
        return ["NameError: BAD" if "BAD" in s else None for s in sources]

    def quick(self, sources):
        self.quicked += sources
        return [{"a": self._value(s)} for s in sources]

    def full(self, sources):
        self.fulled += sources
        return [{"a": self._value(s)} for s in sources]

    def rewrite_hints(self, grammar):
        return ("", "root ::= x" if grammar else None)


class ScriptLLM:
    """Replies from ``reply(request)``; records requests."""

    def __init__(self, reply, grammar=False):
        self.reply = reply
        self.requests = []
        self.grammar = grammar

    def complete(self, request):
        return self.complete_many([request])[0]

    def complete_many(self, requests):
        self.requests += requests
        out = []
        for r in requests:
            text = self.reply(r)
            if text is None:
                out.append(LLMReply(r.key, "", "fake", "fake", error="HTTP 503"))
            else:
                out.append(LLMReply(r.key, text, "fake", "fake", prefill=r.prefill))
        return out


def engine(llm, problem, db=None, **cfg):
    cfg.setdefault("islands", 2)
    config = EvolveConfig(**cfg)
    db = db or ProgramDatabase(config.islands, problem.fitness, problem.descriptor)
    stored, events = [], []
    e = Evolution(problem, db, LLMSession(llm, 1, 0.7, 5), config, max_tokens=256,
                  on_program=lambda p, f: stored.append((p.id, p.status, f)), log=lambda k, d: events.append((k, d)))
    return e, db, stored, events


def climbing(request):
    """A rewrite one better than the parent's value; a diff that bumps it by 0.5."""
    text = request.messages[-1].content
    parent = float(re.search(r"value = (-?[0-9.]+)", text).group(1))
    if "SEARCH/REPLACE" in text or "<<<<<<< SEARCH" in text:
        return f"<<<<<<< SEARCH\n    value = {parent}  # v\n=======\n    value = {parent + 0.5}  # v\n>>>>>>> REPLACE"
    island = int(request.key.step.split("-")[-1])
    return f"```python\n{prog(parent + 1 + island / 10)}```"  # the islands climb apart


def test_search_improves_and_records_every_program():
    problem = FakeProblem()
    e, db, stored, events = engine(ScriptLLM(climbing), problem, generations=3, population_size=2, diff_ratio=0.5)
    e.add_seeds([prog(0.0)])
    assert e.run() == "generations"
    assert db.best() is not None and db.fitness(db.best().id) > 1.0  # the seed had 0
    assert len(stored) == len(db.programs)
    kinds = {p.mutation for p in db.programs.values()}
    assert {"seed", "diff", "rewrite", "migrant"} <= kinds
    # a diff program is its parent with the edit applied
    d = next(p for p in db.programs.values() if p.mutation == "diff" and p.status == "ok")
    assert d.source == db.programs[d.parent].source.replace(
        f"value = {problem._value(db.programs[d.parent].source)}", f"value = {problem._value(d.source)}")
    assert [k for k, _ in events].count("evolve_generation") == 3
    assert events[-1][0] == "evolve_stopped"


def test_cascade_rejects_failures_and_only_promising_programs_get_a_full_evaluation():
    problem = FakeProblem()
    replies = iter(["```python\n" + prog(-5) + "```",              # quick fitness below the elite: not promising
                    "```python\n" + prog(7, "    BAD = 1\n") + "```",  # fails the smoke check
                    "no code at all", None])                        # no code, provider error
    e, db, stored, _ = engine(ScriptLLM(lambda r: next(replies)), problem, islands=1, generations=1,
                              population_size=4, diff_ratio=0.0, overlap=False)
    e.add_seeds([prog(1)])
    e.run()
    statuses = {p.id: p.status for p in db.programs.values()}
    assert sorted(statuses.values()) == ["invalid", "llm_error", "no_code", "not_promising", "seed"]
    assert problem.fulled == [prog(1)]  # the seed only: nothing else reached stage 3
    assert len(problem.quicked) == 2 and len(problem.checked) == 3  # seed + two programs with code
    bad = next(p for p in db.programs.values() if p.status == "invalid")
    assert "BAD" in bad.error and bad.stage == 0


def test_failed_diff_is_recorded_with_its_reason():
    e, db, _, _ = engine(ScriptLLM(lambda r: "<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE"),
                         FakeProblem(), islands=1, generations=1, population_size=1, diff_ratio=1.0)
    e.add_seeds([prog(1)])
    e.run()
    failed = [p for p in db.programs.values() if p.status == "apply_failed"]
    assert len(failed) == 1 and "not in the parent" in failed[0].error and failed[0].diff.startswith("<<<<<<<")


def test_llm_call_budget_stops_the_search():
    llm = ScriptLLM(climbing)
    e, db, _, events = engine(llm, FakeProblem(), generations=10, population_size=2, max_llm_calls=5)
    e.add_seeds([prog(0.0)])
    assert e.run() == "llm_calls"
    assert len(llm.requests) == 5


def test_evaluation_budget_limits_full_evaluations():
    problem = FakeProblem()
    e, db, _, _ = engine(ScriptLLM(climbing), problem, islands=1, generations=5, population_size=2,
                         diff_ratio=0.0, max_evaluations=3)
    e.add_seeds([prog(0.0)])
    assert e.run() == "evaluations"
    assert len(problem.fulled) == 3


def test_overlap_is_deterministic_and_lags_parents_by_one_generation():
    runs = []
    for _ in range(2):
        llm = ScriptLLM(climbing)
        e, db, _, _ = engine(llm, FakeProblem(), generations=4, population_size=2, overlap=True)
        e.add_seeds([prog(0.0)])
        e.run()
        runs.append([(r.key, r.messages[-1].content) for r in llm.requests])
    assert runs[0] == runs[1]
    # with overlap, generation 1 is planned before generation 0 is in: its parents are seeds
    e_parents = {p.parent for p in db.programs.values() if p.generation == 1 and p.mutation != "migrant"}
    assert all(pid.startswith("seed") for pid in e_parents)


def test_grammar_goes_with_rewrites_only_when_the_provider_takes_one_and_the_config_wants_it():
    for use, wanted in itertools.product((True, False), (True, False)):
        llm = ScriptLLM(climbing, grammar=use)
        e, _, _, _ = engine(llm, FakeProblem(), islands=1, generations=1, population_size=4, diff_ratio=0.5,
                            rewrite_grammar=wanted)
        e.add_seeds([prog(0.0)])
        e.run()
        rewrites = 0
        for r in llm.requests:
            rewrite = "SEARCH/REPLACE" not in r.messages[-1].content and "<<<<<<<" not in r.messages[-1].content
            rewrites += rewrite
            assert (r.grammar is not None) == (use and wanted and rewrite)
            # the grammar keeps any sample valid, so it is sampled hotter (issue 26); the rest at the run's 0.7
            assert r.temperature == (EvolveConfig().grammar_temperature if r.grammar else 0.7)
        assert rewrites > 0


def test_a_repeated_program_is_not_evaluated_again():
    problem = FakeProblem()
    e, db, _, _ = engine(ScriptLLM(lambda r: "```python\n" + prog(3) + "```"), problem, islands=1,
                         generations=2, population_size=2, diff_ratio=0.0, overlap=False)
    e.add_seeds([prog(0.0)])
    e.run()
    assert problem.fulled.count(prog(3)) == 1
    assert sum(p.source == prog(3) and p.evaluated for p in db.programs.values()) == 4


def test_a_program_differing_only_in_comments_is_not_checked_or_evaluated_again_issue_26():
    problem = FakeProblem()
    variants = [prog(3), prog(3).replace("  # v", "  # the same value")]
    replies = itertools.cycle(variants)
    e, db, _, _ = engine(ScriptLLM(lambda r: "```python\n" + next(replies) + "```"), problem, islands=1,
                         generations=1, population_size=2, diff_ratio=0.0, overlap=False)
    e.add_seeds([prog(0.0)])
    e.run()
    assert len(problem.checked) == len(problem.fulled) == 2 and problem.checked[1] in variants
    twins = [p for p in db.programs.values() if p.generation == 0]
    assert len(twins) == 2 and all(p.evaluated and p.scores == {"a": 3.0} for p in twins)


def test_repairs_send_a_broken_mutation_back_and_count_as_calls():
    """With ``repairs`` a mutation that fails its check goes back with its error (a diff's
    repair is a whole class); the repaired program is evaluated, its keys recorded, and the
    repair calls count toward the budget. Without, the same reply stays invalid."""
    def broken_then_fixed(request):
        text = request.messages[-1].content
        if text.startswith("That program is not valid"):
            assert ("BAD" in text or "SEARCH text is not in the parent" in text) and "Fix it" in text
            return "```python\n" + prog(5) + "```"
        if "<<<<<<< SEARCH" in text:
            return "<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE"
        return "```python\n" + prog(3, "    BAD = 1\n") + "```"

    for repairs, diff_ratio in ((1, 0.0), (1, 1.0), (0, 0.0)):
        llm = ScriptLLM(broken_then_fixed)
        problem = FakeProblem()
        e, db, _, events = engine(llm, problem, islands=1, generations=1, population_size=1,
                                  diff_ratio=diff_ratio, repairs=repairs, overlap=False)
        e.add_seeds([prog(1)])
        e.run()
        child = next(p for p in db.programs.values() if p.mutation != "seed")
        if repairs:
            assert child.status == "ok" and child.source == prog(5) and db.fitness(child.id) == 5
            assert [str(r.key) for r in llm.requests] == ["1/evolve-0-0/0", "1/repair-evolve-0-0-0/0"]
            assert child.info["repairs"] == ["1/repair-evolve-0-0-0/0"] and child.call_key == "1/evolve-0-0/0"
            assert e.budget.calls == 2 and events[-1][1]["llm_calls"] == 2
        else:
            assert child.status == "invalid" and "BAD" in child.error and len(llm.requests) == 1
