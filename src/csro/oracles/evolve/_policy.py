"""The CSRO problem: a game policy whose fitness is its expected utility against sigma.

Hennes et al. (arXiv 2603.10098) use AlphaEvolve as an oracle with fitness "the expected
utility against the current meta-strategy". Our reading: a program's scores are its mean
returns against each member of the opposing population it has met (its payoff vector),
fitness = sum_j sigma_j * score_j over sigma's support (None while a support member is
missing from its vector), and the behaviour cell is (code length, breadth), where breadth
is the share of sigma's support the program beats, in quarters.
"""

from __future__ import annotations

from typing import Sequence

from csro.arena import Arena, Target
from csro.config import OracleConfig
from csro.games import CodeGame
from csro.llm import Message

from .._context import ContextBuilder, prefill, select_opponents
from .._grammar import grammar_for

from ._database import Program, length_bin

BREADTH_BINS = 4


def expected_utility(support: dict[str, float], scores: dict) -> float | None:
    """sum_j sigma_j * score_j over the support; None if the payoff vector lacks a member."""
    if any(name not in scores for name in support):
        return None
    return float(sum(w * scores[name] for name, w in support.items()))


def cell(support: dict[str, float], program: Program, length_edges: Sequence[int]) -> tuple[int, int]:
    """(code-length bin, breadth): breadth is the share of the support beaten, in quarters."""
    beaten = sum(program.scores.get(name, 0.0) > 0 for name in support)
    breadth = min(BREADTH_BINS - 1, int(BREADTH_BINS * beaten / max(1, len(support))))
    return (length_bin(program.source, length_edges), breadth)


class PolicyProblem:
    """Best responses to sigma over ``opponents`` (their weights are sigma)."""

    quick_comparable = True  # stage 2 plays fewer matches of the same cells

    def __init__(self, game: CodeGame, target: Target, arena: Arena, config: OracleConfig, context: ContextBuilder):
        self.game = game
        self.class_name = game.policy_class
        self.config = config
        self.target = target
        self.support = {o.name: o.weight for o in target.support}
        self.shown = select_opponents(target.opponents, config.context)
        self.context = context
        self.arena = arena

    @property
    def matches(self) -> int:
        return self.arena.matches

    def fitness(self, scores: dict) -> float | None:
        return expected_utility(self.support, scores)

    def descriptor(self, program: Program) -> tuple[int, ...]:
        return cell(self.support, program, self.config.evolve.length_bins)

    def task_messages(self) -> list[Message]:
        return self.context.messages(self.game, self.shown, self.config)

    def scores_text(self, scores: dict) -> str:
        lines = ["Its mean match return against each opponent of the mixture:"]
        lines += [f"- vs {name} (sigma {w:.2f}): {scores[name]:+.1f}"
                  for name, w in sorted(self.support.items(), key=lambda kv: -kv[1]) if name in scores]
        return "\n".join(lines)

    def check(self, sources: Sequence[str]) -> list[str | None]:
        return self.arena.check(sources)

    def play(self, sources: Sequence[str], names: Sequence[str], matches: int | None = None) -> list[dict]:
        """Each source's mean return against the population members called ``names``."""
        return self.arena.play(sources, self.target.named(names), matches)

    def quick(self, sources: Sequence[str]) -> list[dict]:
        return self.play(sources, list(self.support), min(self.config.evolve.quick_matches, self.matches))

    def full(self, sources: Sequence[str]) -> list[dict]:
        return self.play(sources, list(self.support))

    def rewrite_hints(self, grammar: bool) -> tuple[str, str | None]:
        if grammar:
            return grammar_for(self.game)
        return prefill(self.game, self.config), None
