"""The oracles with a scripted LLM and a fake evaluator; programs checked in the real sandbox."""

import pytest

from conftest import FakeEvaluator, ScriptedLLM, fenced, program
from csro.errors import ConfigError
from csro.evaluation.policy_ref import code_policy
from csro.oracles import Attempt, Opponent, get_oracle
from csro.registry import ORACLES
from csro.games.rrps import RRPS_HEADER

CRASHING = "class Agent:\n    def act(self, observation):\n        return 1 / 0\n"


def run(kind, make_ctx, script, **config):
    llm = ScriptedLLM(script)
    ctx, events = make_ctx(llm, **config)
    result = get_oracle(kind).best_response(ctx)
    return result, llm, events


def test_get_oracle_names_the_field():
    assert set(ORACLES.names()) == {"zero_shot", "linear_refinement", "reflect", "evolve", "no_model", "grammar_search"}
    assert get_oracle("reflect").name == "reflect"
    with pytest.raises(ConfigError, match=r"^oracle.kind: unknown oracle 'alpha_evolve'"):
        get_oracle("alpha_evolve")


def test_zero_shot_extracts_the_program_from_prose(make_ctx):
    result, llm, events = run("zero_shot", make_ctx, {"propose": [fenced(program(5))]})
    assert result.source == program(5)
    assert result.feedback.utility == 5
    assert result.call_keys == ["3/propose/0"] and result.author == "model"
    assert result.attempts == [Attempt("3/propose/0", "propose", True, None, 5.0)]
    assert [k for k, _ in events] == ["oracle_candidate"]
    assert "u = 5.0" in result.reason


def test_repair_feeds_the_sandbox_error_back(make_ctx):
    result, llm, events = run("zero_shot", make_ctx, {"propose": [fenced(CRASHING)], "repair-0-0": [fenced(program(2))]})
    assert result.source == program(2)
    assert result.call_keys == ["3/propose/0", "3/repair-0-0/0"]
    repair = llm.requests[1]
    assert repair.messages[-2].role == "assistant" and "1 / 0" in repair.messages[-2].content
    assert repair.messages[-1].role == "user" and "ZeroDivisionError" in repair.messages[-1].content
    assert [a.valid for a in result.attempts] == [False, True]
    assert ("oracle_rejected", {"key": "3/propose/0", "step": "propose", "reason": result.attempts[0].error}) in events


def test_invalid_programs_are_never_returned(make_ctx):
    illegal = "class Agent:\n    def act(self, observation):\n        return 'LIZARD'\n"
    script = {"propose": [fenced(illegal)], "repair-0-0": [fenced(CRASHING)], "repair-0-1": ["```python\ndef (\n```"]}
    result, llm, events = run("linear_refinement", make_ctx, script, grammar_fallback=False, max_refinements=1)
    assert result.source is None and result.feedback is None and result.call_keys == []
    assert "no valid program" in result.reason
    errors = [a.error for a in result.attempts]
    assert "illegal_action" in errors[0] and "ZeroDivisionError" in errors[1]
    assert not any(a.valid for a in result.attempts)
    # u is undefined without a program: the refinement round proposes afresh (unscripted: prose).
    assert "3/refine-1/0" in llm.steps()
    assert sum(k == "oracle_rejected" for k, _ in events) == len(result.attempts)


def test_error_and_non_code_replies_are_survived(make_ctx):
    script = {"propose": [ScriptedLLM.ERROR, "Rock is a good move.", fenced(program(1))],
              "repair-0-0": [fenced(program(3))]}
    result, llm, _ = run("zero_shot", make_ctx, script, samples=3)
    assert llm.steps() == ["3/propose/0", "3/propose/1", "3/propose/2", "3/repair-0-0/1"]  # errors are not repaired
    assert result.source == program(3)
    errors = {a.key: a.error for a in result.attempts}
    assert errors["3/propose/0"].startswith("LLM call failed: HTTP 503")
    assert "no Python code defining class Agent" in errors["3/propose/1"]


def test_the_best_of_several_samples_is_kept(make_ctx):
    script = {"propose": [fenced(program(1)), fenced(program(4, "PAPER")), fenced(program(2, "SCISSORS"))]}
    result, _, _ = run("zero_shot", make_ctx, script, samples=3)
    assert result.feedback.utility == 4 and result.call_keys == ["3/propose/1"]


def test_a_program_drawn_twice_is_evaluated_once_and_recorded_as_a_duplicate_issue_26(make_ctx):
    commented = program(-1).replace("return 'ROCK'", "return 'ROCK'  # rock again")
    script = {"propose": [fenced(program(-3)), fenced(program(-1)), fenced(commented)],
              "refine-1": [fenced(program(-1)), fenced(program(-3)), fenced(program(-2))]}  # u < 0: one more round
    evaluator = FakeEvaluator()
    result, llm, _ = run("linear_refinement", make_ctx, script, samples=3, max_refinements=1, evaluate=evaluator)
    assert evaluator.calls == [program(-3), program(-1), program(-2)]
    duplicates = {a.key: a for a in result.attempts if a.duplicate_of}
    assert duplicates == {
        "3/propose/2": Attempt("3/propose/2", "propose", True, None, -1.0, duplicate_of="3/propose/1"),
        "3/refine-1/0": Attempt("3/refine-1/0", "refine-1", True, None, -1.0, duplicate_of="3/propose/1"),
        "3/refine-1/1": Attempt("3/refine-1/1", "refine-1", True, None, -3.0, duplicate_of="3/propose/0")}
    assert result.source == program(-1) and result.call_keys == ["3/propose/1"]


def test_grammar_fallback_after_failed_repairs(make_ctx):
    script = {"propose": ["no code"], "repair-0-0": ["still none"],
              "grammar-0": ['        # beat the last throw\n        return BEATS[self.last(self.opp)]\n']}
    result, llm, _ = run("zero_shot", make_ctx, script, max_repairs=1)
    grammar = llm.requests[-1]
    assert grammar.key.step == "grammar-0" and grammar.grammar and "root ::=" in grammar.grammar
    assert grammar.stop == ()
    assert result.source.startswith(RRPS_HEADER)
    assert result.call_keys == ["3/grammar-0/0"] and result.author == "grammar"


def test_a_refinement_of_a_grammar_program_is_the_models(make_ctx):
    script = {"propose": ["no code"], "grammar-0": ['        return BEATS[self.last(self.opp)]\n'],
              "refine-1": [fenced(program(4))]}
    result, llm, _ = run("linear_refinement", make_ctx, script, max_repairs=0, max_refinements=1)
    assert result.source == program(4) and result.author == "model"
    assert result.call_keys == ["3/grammar-0/0", "3/refine-1/0"]


def test_no_model_answers_the_example_without_a_call_issue_26(make_ctx, rrps):
    result, llm, events = run("no_model", make_ctx, {})
    assert result.source == rrps.example_policy and result.author == "example"
    assert llm.requests == [] and result.call_keys == [] and result.attempts == []
    assert result.feedback is not None


def test_zero_shot_does_not_refine(make_ctx):
    result, llm, _ = run("zero_shot", make_ctx, {"propose": [fenced(program(-5))]})
    assert llm.steps() == ["3/propose/0"] and result.feedback.utility == -5


def test_refinement_keeps_only_improvements_and_stops_at_nonnegative_u(make_ctx):
    script = {"propose": [fenced(program(-5))], "refine-1": [fenced(program(-8))],
              "refine-2": [fenced(program(-2))], "refine-3": [fenced(program(3))],
              "refine-4": [fenced(program(9))]}
    result, llm, _ = run("linear_refinement", make_ctx, script, max_refinements=10)
    assert llm.steps() == ["3/propose/0", "3/refine-1/0", "3/refine-2/0", "3/refine-3/0"]
    assert result.source == program(3)
    assert result.call_keys == ["3/propose/0", "3/refine-2/0", "3/refine-3/0"]
    # refine-2 is built on the best so far (the proposal, u = -5), not on the worse refine-1.
    refine2 = llm.requests[2]
    assert "u=-5" in refine2.messages[-2].content and "u = -5.0" in refine2.messages[-1].content
    assert "u=-8" not in "".join(m.content for m in refine2.messages)


def test_refinement_stops_after_m_rounds(make_ctx):
    script = {"propose": [fenced(program(-5))], "refine-1": [fenced(program(-4))], "refine-2": [fenced(program(-3))]}
    result, llm, _ = run("linear_refinement", make_ctx, script, max_refinements=2)
    assert llm.steps() == ["3/propose/0", "3/refine-1/0", "3/refine-2/0"]
    assert result.feedback.utility == -3


def test_call_keys_and_seeds_are_deterministic(make_ctx):
    script = {"propose": [fenced(CRASHING), "prose"], "repair-0-0": [fenced(program(-1)), fenced(program(-2))],
              "refine-1": [fenced(program(1)), fenced(program(2))]}
    runs = [run("linear_refinement", make_ctx, script, samples=2) for _ in range(2)]
    (a, llm_a, _), (b, llm_b, _) = runs
    assert [(str(r.key), r.seed) for r in llm_a.requests] == [(str(r.key), r.seed) for r in llm_b.requests]
    assert len({str(r.key) for r in llm_a.requests}) == len(llm_a.requests)
    assert len({r.seed for r in llm_a.requests}) == len(llm_a.requests)
    assert a.source == b.source == program(2) and a.attempts == b.attempts


def test_prefill_style_continues_the_class_header(make_ctx):
    reply = 'Always paper."""\n\n    def act(self, observation):\n        return "PAPER"  # u=1\n'
    result, llm, _ = run("zero_shot", make_ctx, {"propose": [reply]}, prompt="prefill")
    request = llm.requests[0]
    assert request.prefill.startswith("```python\n") and "class Agent:" in request.prefill
    assert "\n```" in request.stop
    assert result.source.startswith("import random\n\n\nclass Agent:\n    \"\"\"Strategy: Always paper.")


def test_scaffold_style_continues_inside_init(make_ctx):
    reply = ('always paper.\n        self.plays = 0\n\n    def act(self, observation):\n'
             '        self.plays += 1\n        return "PAPER"  # u=1\n')
    result, llm, _ = run("zero_shot", make_ctx, {"propose": [reply]}, prompt="scaffold")
    assert llm.requests[0].prefill.endswith("        # Strategy: ")
    assert result.source.startswith("import random\n\n\nclass Agent:\n    def __init__(self):\n        self.history = []")
    assert "        # Strategy: always paper.\n        self.plays = 0\n" in result.source


def test_repair_names_what_to_define(make_ctx):
    undefined = "class Agent:\n    def act(self, observation):\n        return self.counter  # u=1\n"
    result, llm, _ = run("zero_shot", make_ctx, {"propose": [fenced(undefined)], "repair-0-0": [fenced(program(2))]})
    message = llm.requests[1].messages[-1].content
    assert "AttributeError: 'Agent' object has no attribute 'counter'" in message
    assert "self.counter is used but never set: set self.counter in __init__" in message
    assert result.source == program(2)


def test_reflect_diagnoses_then_rewrites_with_key_moments(make_ctx):
    script = {"propose": [fenced(program(-5, "SCISSORS"))],
              "diagnose-1": ["1. It always throws SCISSORS.\n2. act.\n3. Throw PAPER."],
              "rewrite-1": [fenced(program(4, "PAPER"))]}
    result, llm, events = run("reflect", make_ctx, script)
    assert llm.steps() == ["3/propose/0", "3/diagnose-1/0", "3/rewrite-1/0"]
    diagnose, rewrite = llm.requests[1], llm.requests[2]
    observation = diagnose.messages[-1].content
    assert "Key moments of one match against p0" in observation and "'SCISSORS'" in observation
    assert "Failure mode" in observation
    assert rewrite.messages[-2] .content.startswith("1. It always throws SCISSORS")
    assert result.source == program(4, "PAPER")
    assert result.call_keys == ["3/propose/0", "3/diagnose-1/0", "3/rewrite-1/0"]
    assert any(k == "oracle_diagnosis" for k, _ in events)


def test_reflect_rolls_back_and_remembers(make_ctx):
    script = {"propose": [fenced(program(-5))], "diagnose-1": [ScriptedLLM.ERROR],
              "rewrite-1": [fenced(CRASHING)], "diagnose-2": ["1. x\n2. y\n3. z"],
              "rewrite-2": [fenced(program(-9))]}
    result, llm, _ = run("reflect", make_ctx, script, max_refinements=2, max_repairs=0, grammar_fallback=False)
    assert result.source == program(-5) and result.call_keys == ["3/propose/0"]
    rewrite1 = next(r for r in llm.requests if r.key.step == "rewrite-1")
    assert "rewrite the program" in rewrite1.messages[-1].content  # asked without a diagnosis
    diagnose2 = next(r for r in llm.requests if r.key.step == "diagnose-2")
    assert "round 1: u was -5.0; diagnosis: (no diagnosis); no valid rewrite" in diagnose2.messages[-1].content


def test_descriptions_are_one_cached_call_per_opponent(make_ctx, rrps):
    opponents = [Opponent("p1", 0.7, code_policy("p1", program(0, "PAPER"), rrps)),
                 Opponent("p2", 0.3, code_policy("p2", program(0), rrps))]
    llm = ScriptedLLM({"describe-p1": ["Always PAPER."], "describe-p2": ["Always ROCK."],
                       "propose": [fenced(program(1)), fenced(program(2))]})
    oracle = get_oracle("zero_shot")
    for iteration in (3, 4):
        ctx, _ = make_ctx(llm, opponents=opponents, iteration=iteration, context={"opponents": "description"})
        result = oracle.best_response(ctx)
    assert llm.steps() == ["0/describe-p1/0", "0/describe-p2/0", "3/propose/0", "4/propose/0"]
    prompt = llm.requests[2].messages[-1].content
    assert "Behaviour: Always PAPER." in prompt and "return 'PAPER'" not in prompt
    assert result.call_keys == ["0/describe-p1/0", "0/describe-p2/0", "4/propose/0"]
