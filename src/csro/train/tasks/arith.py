"""``arith``: the SRPO paper's math workflow on generated arithmetic word problems.

Workflow (Yang et al., arXiv 2609.08452, math experiments): a *router* reads the problem and
decides how many *solvers* work on it in parallel (1..k), the solvers answer independently
(one active set of K_e members), a *verifier* checks their answers and an *aggregator*
states the final answer. The team reward of an episode is 1 when the aggregator's first
integer equals the exact answer, ``FORMAT_REWARD`` when it states some other integer, and 0
when it states none (a small format reward, as in DeepSeek-R1's recipe; our choice, so a
group of a small model's episodes has reward variance before it gets answers right).

Problems are generated from a seed (our stand-in for the paper's math data sets, which
cannot be downloaded here): one-step word problems (addition, subtraction, multiplication)
over small integers, so a 135M model gets some right and the group has reward variance.
The router's reply is parsed for its first digit; none, or one out of range, means ``k``.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Sequence

from csro.seeding import derive_seed
from csro.train.replies import first_int
from csro.train.events import Stage, Workflow
from csro.train.rollout import Episode

WORKFLOW = Workflow("router-solvers-verifier-aggregator",
                    (Stage("router"), Stage("solver", None), Stage("verifier"), Stage("aggregator")))
NAMES = ("Ann", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana")
FORMAT_REWARD = 0.1
ITEMS = ("apples", "books", "coins", "pens", "stones", "cards")


@dataclasses.dataclass(frozen=True)
class Problem:
    text: str
    answer: int


def make_problem(seed: int, max_operand: int = 9) -> Problem:
    """One seeded word problem with its exact integer answer."""
    rng = random.Random(seed)
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = rng.randint(1, max_operand), rng.randint(1, max_operand)
    kind = rng.choice(("add", "sub", "mul"))
    if kind == "add":
        return Problem(f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have now?", a + b)
    if kind == "sub":
        a, b = max(a, b), min(a, b)
        return Problem(f"{name} has {a} {item} and gives {b} away. How many {item} are left?", a - b)
    return Problem(f"{name} has {a} bags with {b} {item} in each bag. How many {item} are there in total?", a * b)


class ArithTask:
    """The ``arith`` task: see the module docstring."""

    name = "arith"
    workflow = WORKFLOW

    def __init__(self, k: int = 3, seed: int = 0, max_operand: int = 9,
                 tokens: dict[str, int] | None = None):
        self.k, self.seed, self.max_operand = k, seed, max_operand
        self.tokens = {"router": 4, "solver": 8, "verifier": 8, "aggregator": 6, **(tokens or {})}

    def problem(self, step: int, index: int) -> Problem:
        return make_problem(derive_seed(self.seed, "arith", step, index), self.max_operand)

    def width(self, stage: Stage, episode: Episode) -> int:
        if stage.width is not None:
            return stage.width
        choice = first_int(episode.outputs["router"][0])
        return choice if choice is not None and 1 <= choice <= self.k else self.k

    def max_new_tokens(self, role: str) -> int:
        return self.tokens[role]

    def prompt(self, stage: Stage, member: int, episode: Episode) -> tuple[list[tuple[str, str]], str]:
        p: Problem = episode.problem
        out = episode.outputs
        if stage.role == "router":
            return [("system", "You are the router of a team that solves math word problems."),
                    ("user", f"Problem: {p.text}\nHow many solvers (1 to {self.k}) should work on it "
                             "independently? Reply with one digit.")], ""
        if stage.role == "solver":
            return [("system", f"You are solver {member + 1} of a math team."),
                    ("user", f"{p.text}\nReply with only the final number.")], ""
        answers = "\n".join(f"{i + 1}) {a.strip()[:40]}" for i, a in enumerate(out["solver"]))
        if stage.role == "verifier":
            return [("system", "You are the verifier of a math team."),
                    ("user", f"Problem: {p.text}\nThe solvers answered:\n{answers}\n"
                             "Which answer is correct? Reply with only that number.")], ""
        verdict = out["verifier"][0].strip()[:40]
        return [("system", "You are the aggregator of a math team."),
                ("user", f"Problem: {p.text}\nSolver answers:\n{answers}\nThe verifier says: {verdict}\n"
                         "Give the final answer as a single number.")], ""

    def rewards(self, episodes: Sequence[Episode], seed: int) -> list[float]:
        return [score(ep.outputs["aggregator"][0], ep.problem.answer) for ep in episodes]


def score(reply: str, answer: int) -> float:
    """1 for the exact answer, ``FORMAT_REWARD`` for another integer, 0 for none."""
    stated = first_int(reply)
    return 0.0 if stated is None else 1.0 if stated == answer else FORMAT_REWARD
