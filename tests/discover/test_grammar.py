"""The CFR-hook grammar: every sentence is a program that runs in the real engine."""

import random

from csro.config import EvolveConfig
from csro.discover import CFRHooksProblem
from csro.discover._grammar import CFR_RULES, HEAD, cfr_grammar
from csro.extract import extract_code
from csro.gbnf import sample
from csro.policies import SandboxLimits
from csro.solvers.suite import resolve_games


def test_every_sampled_cfr_program_passes_the_check_and_gets_a_fitness():
    rng = random.Random(0)
    replies = [HEAD + sample(CFR_RULES, rng) for _ in range(8)]
    sources = [extract_code(r, "Hooks").source for r in replies]
    assert None not in sources and len(set(sources)) == len(sources)
    problem = CFRHooksProblem(resolve_games("kuhn_2p"), 20, 0.1, EvolveConfig(), SandboxLimits(call_seconds=30), {})
    assert problem.check(sources) == [None] * len(sources)
    assert all(problem.fitness(s) is not None for s in problem.full(sources))


def test_only_the_embedded_rewrites_get_the_grammar():
    problem = CFRHooksProblem(resolve_games("kuhn_2p"), 20, 0.1, EvolveConfig(), SandboxLimits(), {})
    prefill, gbnf = problem.rewrite_hints(True)
    assert (prefill, gbnf) == cfr_grammar() and "root ::=" in gbnf
    assert problem.rewrite_hints(False)[1] is None
