"""The context builder: opponent filters, code budget, prompt styles."""

import itertools

from conftest import program
from csro.config import ContextConfig, OracleConfig
from csro.evaluation.policy_ref import code_policy, resolve
from csro.games import load_game
from csro.oracles import Opponent
from csro.oracles._context import (OPPONENT_CODE_CHARS, ContextBuilder, PromptLevers, api_outline, contract, prefill,
                                   select_opponents, truncate_code)


def opponents(rrps, weights):
    return [Opponent(f"p{i}", w, code_policy(f"p{i}", program(i), rrps)) for i, w in enumerate(weights)]


def names(selected):
    return [o.name for o in selected]


def test_filters_keep_the_support_heaviest_first(rrps):
    pool = opponents(rrps, [0.05, 0.0, 0.4, 0.2, 0.01, 0.3, 0.04])
    assert names(select_opponents(pool, ContextConfig(filter="all"))) == ["p2", "p5", "p3", "p0", "p6", "p4"]
    assert names(select_opponents(pool, ContextConfig(filter="top_k", k=2))) == ["p2", "p5"]
    assert names(select_opponents(pool, ContextConfig(filter="min_support", min_support=0.05))) == ["p2", "p5", "p3", "p0"]
    # a threshold nobody reaches keeps the heaviest opponent rather than none
    assert names(select_opponents(pool, ContextConfig(filter="min_support", min_support=0.9))) == ["p2"]


def test_long_code_is_cut_at_a_line_with_a_note():
    source = "".join(f"x{i} = {i}\n" for i in range(100))
    cut = truncate_code(source, 50)
    assert len(cut.split("\n# ...")[0]) <= 50 and cut.startswith("x0 = 0\nx1 = 1\n")
    assert cut.endswith(f"# ... ({100 - cut.count(' = ')} more lines cut)")
    assert truncate_code("a = 1\n", 50) == "a = 1"


def test_opponents_as_code_description_or_both(rrps):
    pool = [Opponent("p0", 0.75, resolve("builtin:rockbot", rrps), "throws ROCK"),
            Opponent("p1", 0.25, code_policy("p1", "X = 1\n" * 5000, rrps))]
    builder = ContextBuilder()
    builder.descriptions["p1"] = "Constant."
    code = builder.opponents_block(pool, ContextConfig(opponents="code"))
    assert "p0 (sigma weight 0.75)\nthrows ROCK" in code and "Constant." not in code
    assert len(code) < OPPONENT_CODE_CHARS + 400 and "more lines cut" in code
    both = builder.opponents_block(pool, ContextConfig(opponents="both"))
    assert "Behaviour: Constant." in both and "X = 1" in both
    assert "X = 1" not in builder.opponents_block(pool, ContextConfig(opponents="description"))


def test_prompt_styles(rrps):
    builder = ContextBuilder()
    pool = opponents(rrps, [1.0])
    for style, example in itertools.product(("plain", "prefill", "scaffold"), (False, True)):
        config = OracleConfig(prompt=style, example=example)
        system, user = builder.messages(rrps, pool, config)
        assert system.role == "system" and user.role == "user"
        assert api_outline(rrps) in user.content and "sigma weight 1.00" in user.content
        assert user.content.count(contract(rrps)) == 1
        assert (rrps.example_policy.strip() in user.content) == example
        assert "docstring that explains the strategy" in user.content
    assert prefill(rrps, OracleConfig(prompt="plain")) == ""
    assert prefill(rrps, OracleConfig(prompt="prefill")) == '```python\nimport random\n\n\nclass Agent:\n    """Strategy: '
    quiet = OracleConfig(prompt="prefill", context={"self_explain": False})
    assert prefill(rrps, quiet).endswith("class Agent:\n")
    assert "docstring" not in builder.messages(rrps, pool, quiet)[1].content
    scaffold = prefill(rrps, OracleConfig(prompt="scaffold"))
    assert scaffold.endswith("    def __init__(self):\n        self.history = []  # what you have observed so far, "
                             "oldest first\n        # Strategy: ")
    assert prefill(rrps, OracleConfig(prompt="scaffold", context={"self_explain": False})).endswith("oldest first\n")


def test_the_old_levers_show_the_api_verbatim_without_the_contract(rrps):
    old = ContextBuilder(PromptLevers(api="code", contract=False))
    user = old.messages(rrps, opponents(rrps, [1.0]), OracleConfig())[1].content
    assert rrps.api_spec.strip() in user and "Contract:" not in user


def test_api_outline_has_every_method_and_docstring_but_no_stub_body(rrps):
    outline = api_outline(rrps)
    assert outline.startswith("class Agent:\n    A Repeated Rock-Paper-Scissors policy.")
    assert "\n    __init__(self)\n" in outline and "\n    act(self, observation: dict) -> str\n        Choose this throw." in outline
    assert "..." not in outline and '"""' not in outline and "def " not in outline
    leduc_outline = api_outline(load_game("leduc"))
    for header in ("restart(self, player_id: int) -> None", "act(self, observation: dict) -> str",
                   "receive_outcome(self, observation: dict) -> None"):
        assert "\n    " + header + "\n" in leduc_outline


def test_repair_hints_name_the_fix():
    from csro.drafting import repair_hint, repair_prompt
    trace = "Traceback (most recent call last):\n  File \"<policy>\", line 3, in act\n"
    assert repair_hint(trace + "NameError: name 'BEATS' is not defined").startswith("`BEATS` is used but never defined")
    assert "set self.move in __init__" in repair_hint(trace + "AttributeError: 'Agent' object has no attribute 'move'")
    assert "no arguments" in repair_hint("TypeError: Agent.__init__() missing 1 required positional argument: 'x'")
    assert repair_hint(trace + "KeyError: 'ROCK'").startswith("Key 'ROCK' is missing")
    assert repair_hint(trace + "    raise ValueError('bad observation')\nValueError: bad observation").startswith("Never raise")
    assert repair_hint("an illegal action was returned (illegal_action): seat 0 answered 'rock'").startswith("Return only")
    assert repair_hint("a reply had the wrong type (malformed): act returned NoneType, not a string").startswith(
        "act returned None: every path")
    assert repair_hint("SyntaxError: '(' was never closed at line 3") is not None
    assert repair_hint(trace + "ZeroDivisionError: division by zero") is None
    plain = repair_prompt(trace + "NameError: name 'X' is not defined", "Agent", hints=False)
    assert "never defined" not in plain and "NameError" in plain
