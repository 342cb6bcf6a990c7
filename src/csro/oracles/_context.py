"""The oracle's prompt: rules, the exact policy API, and the opponents in sigma's support.

Hennes et al. (arXiv 2603.10098) give the LLM the game rules, an exact API spec, and the
policies of sigma's support as raw code, as an LLM-written description of their behaviour
(a separate call), or both; filtered to all of the support, the top-k by sigma weight
(k = 5 worked best) or those above a minimum support. Optionally the program must explain
itself (a docstring describing the strategy).

Our interpretation where the paper is silent:
- sigma's weights are shown next to each opponent (the LLM needs to know whom to beat most).
- An opponent's description is written once per policy and cached by policy name, under
  the call key ``0/describe-<name>/0`` whatever iteration first needs it, so a resumed run
  finds it in the recording. Built-ins without source are shown by their own description.
- The embedded model has a 4096-token window and reads ~100-150 prompt tokens/s on two
  cores, so the opponents' code shares a budget of ``OPPONENT_CODE_CHARS`` characters and a
  longer program is cut at a line boundary with a note of what was cut.
- A min-support filter that leaves nobody falls back to the heaviest opponent.

Prompt styles (``oracle.prompt``): ``prefill`` starts the assistant's reply with an opening
python fence and the policy class line (and, with ``self_explain``, its docstring opened
with ``Strategy:``; opened bare, the 0.5B model copied the API's docstring instead of describing
a strategy), so the model only continues a program; ``scaffold`` starts it deeper, inside
``__init__`` with a history list already set up (and, with ``self_explain``, a ``# Strategy:``
comment opened there), so the model's first lines are the state its strategy needs; ``plain``
is the request only. In every style the reply is asked for as one fenced python block, and
``oracle.example`` adds the game's worked example policy (a short program that reads the
observations the way a strategy of that game needs to; the small models otherwise wrote
policies that ignore them, docs/oracles.md).

Two levers for small models, general to any game's API (measured in ``bench/valid_rate.py``,
docs/oracles.md): the API is shown as an *outline* (the class and each method's signature
with its docstring, in a plain fence) rather than as Python with stub bodies, which the 0.5B
model copied verbatim; and the *contract* of the runner (no constructor arguments, methods
called as documented, observations exactly as documented: read them, never validate or
raise; every attribute set in ``__init__``) is stated once, after the opponents' code.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Sequence

from csro.arena import Feedback, Opponent
from csro.config import ContextConfig, OracleConfig
from csro.games import CodeGame
from csro.llm import LLMRequest, LLMSession, Message
from csro.llm.estimate import Scenario, Tally
from csro.llm.tokens import CHARS_PER_TOKEN

from ._base import CallSize

from ._grammar import method_header

OPPONENT_CODE_CHARS = 4000  # all opponents' code together (~1200 tokens)
DESCRIPTION_TOKENS = 200
DESCRIBE_REQUEST_TOKENS = 60  # the description request's system message and instruction (cost model)
STOP = ("\n```", "\nif __name__")

SYSTEM = ("You are an expert game-playing programmer. You write one complete, self-contained "
          "Python class that implements a policy for a game, exactly to the given API. "
          "Reply with a single ```python code block and nothing else.")


def select_opponents(opponents: Sequence[Opponent], context: ContextConfig) -> list[Opponent]:
    """Sigma's support (weight > 0) filtered by ``context.filter``, heaviest first."""
    support = sorted((o for o in opponents if o.weight > 0), key=lambda o: -o.weight)
    if context.filter == "top_k":
        return support[:context.k]
    if context.filter == "min_support":
        kept = [o for o in support if o.weight >= context.min_support]
        return kept or support[:1]
    return support


def truncate_code(source: str, limit: int) -> str:
    """``source`` cut at a line boundary to at most ``limit`` characters, saying what was cut."""
    if len(source) <= limit:
        return source.rstrip("\n")
    lines = source.splitlines()
    kept, size = [], 0
    for line in lines:
        if size + len(line) + 1 > limit:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept) + f"\n# ... ({len(lines) - len(kept)} more lines cut)"


def prefill(game: CodeGame, config: OracleConfig) -> str:
    """The start of the reply in the ``prefill`` and ``scaffold`` styles ("" in the others)."""
    start = f"```python\nimport random\n\n\nclass {game.policy_class}:\n"
    if config.prompt == "prefill":
        return start + '    """Strategy: ' if config.context.self_explain else start
    if config.prompt == "scaffold":
        start += ("    def __init__(self):\n"
                  "        self.history = []  # what you have observed so far, oldest first\n")
        return start + "        # Strategy: " if config.context.self_explain else start
    return ""


def api_outline(game: CodeGame, spec: str | None = None) -> str:
    """The policy API (``spec``, the game's by default) without stub bodies: the class line,
    its docstring, and each method's signature with its docstring, indented as in the API (a
    plain-text outline, not code)."""
    tree = ast.parse(spec or game.api_spec)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == game.policy_class)
    lines = [f"class {game.policy_class}:"] + _indented(ast.get_docstring(cls), 4)
    for method in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
        lines += ["", "    " + method_header(method)[len("def "):].rstrip(":")] + _indented(ast.get_docstring(method), 8)
    return "\n".join(lines)


def _indented(text: str | None, spaces: int) -> list[str]:
    return [(" " * spaces + line).rstrip() for line in (text or "").splitlines()]


def contract(game: CodeGame) -> str:
    """The runner's contract, stated once: how the policy object is made and called."""
    cls = game.policy_class
    return (f"Contract: the runner creates {cls}() with no arguments, then calls its methods exactly "
            "as the API says, with observations exactly in the documented format: read the fields "
            "you need directly; never validate them or raise. Set every attribute you use "
            "(self.name) in __init__, and define every constant and helper you use. An exception, "
            "an illegal return value or a timeout forfeits the match.")


@dataclasses.dataclass(frozen=True)
class PromptLevers:
    """Prompt choices for small models that are not run configuration: the loop uses the
    defaults (the measured best); ``bench/valid_rate.py`` switches them off to measure them.

    Attributes:
      api: ``outline`` (signatures and docstrings, see ``api_outline``) or ``code`` (the
        game's API verbatim, with its stub bodies).
      contract: state the runner's contract (``contract``) once.
    """

    api: str = "outline"
    contract: bool = True


def describe_request(game: CodeGame, opponent: Opponent, config: OracleConfig, llm: LLMSession) -> LLMRequest:
    """The separate call that describes one opponent's behaviour (key ``0/describe-NAME/0``)."""
    code = truncate_code(opponent.spec.source or "", OPPONENT_CODE_CHARS)
    messages = (
        Message("system", "You analyse game-playing programs and describe their behaviour concisely."),
        Message("user", f"{game.rules_text}\nThis is an opponent's policy:\n```python\n{code}\n```\n"
                        "In at most four sentences, describe how it plays: its patterns, what it "
                        "reacts to, and how it could be exploited. No code."),
    )
    return llm.request(f"describe-{opponent.name}", messages, iteration=0,
                       max_tokens=min(DESCRIPTION_TOKENS, config.max_tokens))


class ContextBuilder:
    """Builds the oracle's messages; caches opponent descriptions by policy name."""

    def __init__(self, levers: PromptLevers = PromptLevers()) -> None:
        self.levers = levers
        self.descriptions: dict[str, str] = {}
        self.description_keys: dict[str, str] = {}

    def describe(self, game: CodeGame, opponents: Sequence[Opponent], config: OracleConfig, llm: LLMSession) -> None:
        """Fetch the descriptions of code opponents not described yet (one call each, at once)."""
        missing = [o for o in opponents if o.spec.source is not None and o.name not in self.descriptions]
        if not missing:
            return
        requests = [describe_request(game, o, config, llm) for o in missing]
        for o, request, reply in zip(missing, requests, llm.complete_many(requests)):
            text = reply.text.strip() if reply.ok else ""
            self.descriptions[o.name] = text or "(no description could be written; see its code)"
            self.description_keys[o.name] = str(request.key)

    def opponents_block(self, opponents: Sequence[Opponent], context: ContextConfig) -> str:
        """The opponents with their sigma weights, as code, description, or both."""
        if not opponents:
            return "No opponent information is available.\n"
        code_budget = OPPONENT_CODE_CHARS // max(1, sum(o.spec.source is not None for o in opponents))
        parts = ["Your opponents, with the probability sigma that each is the one you face in a match:"]
        for o in opponents:
            parts.append(f"\n### Opponent {o.name} (sigma weight {o.weight:.2f})")
            if o.spec.source is None:
                parts.append(o.description or o.spec.name)
                continue
            if context.opponents in ("description", "both"):
                parts.append("Behaviour: " + self.descriptions.get(o.name, "(not described)"))
            if context.opponents in ("code", "both"):
                parts.append(f"```python\n{truncate_code(o.spec.source, code_budget)}\n```")
        return "\n".join(parts) + "\n"

    def prompt_cost(self, config: OracleConfig, size: CallSize, scenario: Scenario) -> tuple[float, int]:
        """(tokens of the prompt of a call that can show ``size.written`` code opponents, the
        opponents shown): the first prompt plus their code (``OPPONENT_CODE_CHARS`` in all at
        most) and descriptions, as many as the filter lets through (one under a scenario that
        does not show them all)."""
        ctx = config.context
        shown = min(size.written, ctx.k) if ctx.filter == "top_k" else size.written
        shown = shown if scenario.all_opponents else min(shown, 1)
        prompt = size.first
        if ctx.opponents in ("code", "both"):
            prompt += min(shown * size.program, OPPONENT_CODE_CHARS / CHARS_PER_TOKEN)
        if ctx.opponents in ("description", "both"):
            prompt += shown * _description_tokens(config, scenario)
        return prompt, shown

    def describe_cost(self, config: OracleConfig, size: CallSize, scenario: Scenario) -> Tally:
        """The description calls (``describe``) of a call: one for each of ``size.new``."""
        tally = Tally()
        if config.context.opponents in ("description", "both"):
            code = min(size.program, OPPONENT_CODE_CHARS / CHARS_PER_TOKEN)
            tally.add(size.new, size.rules + code + DESCRIBE_REQUEST_TOKENS, _description_tokens(config, scenario))
        return tally

    def lineage_keys(self, opponents: Sequence[Opponent]) -> list[str]:
        """The description calls that went into a prompt about ``opponents``."""
        return [self.description_keys[o.name] for o in opponents if o.name in self.description_keys]

    def messages(self, game: CodeGame, opponents: Sequence[Opponent], config: OracleConfig,
                 seat: int | None = None) -> list[Message]:
        """System and user messages asking for a best response to ``opponents`` (in ``seat``
        of an n-player or asymmetric game: its rules and API, and which seat it plays)."""
        task = (f"Write a class {game.policy_class} that maximises its expected return against "
                "this mixture of opponents: exploit their weaknesses.")
        if config.context.self_explain:
            task += " Start the class with a docstring that explains the strategy."
        rules, spec = (game.rules_text, game.api_spec) if seat is None else (game.seat_rules_text(seat),
                                                                                game.seat_api_spec(seat))
        api = (f"```\n{api_outline(game, spec)}\n```" if self.levers.api == "outline"
               else f"```python\n{spec.rstrip()}\n```")
        user = [rules.rstrip(), "\nThe exact policy API (your class must match it):", api, ""]
        if seat is not None:
            role = f" ({game.seat_roles[seat]})" if game.seat_roles else ""
            user.append(f"Your policy always plays seat {seat}{role} of this {game.num_players}-player game; "
                        "the other seats are filled by the opponents below, each with its probability.")
        user.append(self.opponents_block(opponents, config.context))
        if config.example:
            user += ["A working example policy (a simple one; write a better one):",
                     f"```python\n{game.example_policy.rstrip()}\n```\n"]
        if self.levers.contract:
            user.append(contract(game))
        user.append(task + " Reply with the complete program in one ```python block.")
        return [Message("system", SYSTEM), Message("user", "\n".join(user))]


def _description_tokens(config: OracleConfig, scenario: Scenario) -> float:
    return min(DESCRIPTION_TOKENS, config.max_tokens) * scenario.completion


def feedback_text(feedback: Feedback, weights: dict[str, float], max_detail: int = 300) -> str:
    """How a program did against sigma: the paper's u, per-opponent returns and forfeits."""
    lines = [f"Against the opponent mixture this program scored u = {feedback.utility:.1f} "
             f"(sigma-weighted mean match return over {feedback.matches} matches)."]
    lines += [f"- vs {name} (sigma {weights.get(name, 0.0):.2f}): {value:+.1f}"
              for name, value in sorted(feedback.per_opponent.items(), key=lambda kv: kv[1])]
    if feedback.forfeits:
        lines.append("Forfeited matches: " + ", ".join(f"{r} x{n}" for r, n in sorted(feedback.forfeits.items())))
        for detail in feedback.forfeit_details[:1]:
            lines.append(f"e.g. {detail.get('reason')}: {str(detail.get('detail', ''))[-max_detail:]}")
    return "\n".join(lines)
