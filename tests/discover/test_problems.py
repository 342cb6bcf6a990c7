"""Discovery problems over the real sandbox and the real solvers: fitness from real runs."""

import pytest

from csro.config import EvolveConfig
from csro.discover import CFR_PLUS, REGRET_MATCHING, CFRHooksProblem, MetaSolverProblem, ProgramFailure
from csro.policies import SandboxLimits
from csro.solvers.cfr import SolveConfig, solve
from csro.solvers.psro_exact import run_psro_exact
from csro.solvers.suite import resolve_games

LIMITS = SandboxLimits(memory_mb=2048, cpu_seconds=60, start_seconds=30, call_seconds=30, match_seconds=30)


@pytest.fixture(scope="module")
def cfr():
    return CFRHooksProblem(resolve_games("kuhn_2p,kuhn_3p"), 50, 0.2, EvolveConfig(), LIMITS, {})


def test_the_cfr_plus_seed_reproduces_the_library_exactly(cfr):
    for game in cfr.train:
        library = solve(SolveConfig(game.game, "cfr+", 50, (10,)))
        assert cfr.curve(CFR_PLUS, game, 50, (10, 50)) == pytest.approx(
            [p.exploitability for p in library.curve], rel=1e-12, abs=1e-15)
    scores = cfr.full([CFR_PLUS])[0]
    assert cfr.fitness(scores) == pytest.approx(-sum(scores.values()) / 2)
    assert cfr.quick([CFR_PLUS])[0]["kuhn_2p"] > scores["kuhn_2p"]  # 10 iterations are worse than 50


def test_a_changed_hook_changes_the_measured_fitness(cfr):
    quadratic = CFR_PLUS.replace("((t + 1.0) * reach)", "((t + 1.0) ** 2 * reach)")
    from csro.solvers.cfr import CFRSolver, Variant
    from csro.solvers.cfr._blocks import FlooredSumRegret, PolynomialAverage, RegretMatchingPolicy

    trusted = CFRSolver("kuhn_poker", Variant("q", FlooredSumRegret(), RegretMatchingPolicy(), PolynomialAverage(2)))
    trusted.run(50)
    assert cfr.curve(quadratic, cfr.train[0], 50, (50,))[0] == pytest.approx(trusted.exploitability(), rel=1e-12)


@pytest.mark.parametrize("body, reason", [
    ("    def update_accumulate_regret(self, block, t, regrets):\n        raise RuntimeError('boom')\n", "exception"),
    ("    def update_accumulate_regret(self, block, t, regrets):\n        open('/etc/passwd').read()\n", "forbidden"),
    ("    def update_accumulate_regret(self, block, t, regrets):\n        while True:\n            pass\n", "timeout"),
])
def test_failing_hooks_are_reported_by_the_sandbox(body, reason):
    problem = CFRHooksProblem(resolve_games("kuhn_2p"), 5, 0.2, EvolveConfig(),
                              SandboxLimits(memory_mb=1024, cpu_seconds=10, start_seconds=20, call_seconds=3), {})
    source = CFR_PLUS.replace("    def update_accumulate_regret(self, block, t, regrets):\n"
                              "        return np.maximum(block.cumulative_regret + regrets, 0.0)\n", body)
    error = problem.check([source])[0]
    assert error is not None and f"({reason})" in error
    assert problem.full([source]) == [{}] and problem.fitness({}) is None


def test_a_program_cannot_report_a_policy_that_is_no_distribution(cfr):
    """A program that patches the engine to answer a bogus average policy is caught here."""
    cheat = CFR_PLUS + (
        "\n\nimport csro.solvers.cfr._engine as _engine\n"
        "_engine.CFRSolver.average_policy_arrays = lambda self: [b.legal * 5.0 for b in self.blocks]\n")
    with pytest.raises(ProgramFailure, match="not a distribution"):
        cfr.curve(cheat, cfr.train[0], 5, (5,))


def test_the_meta_solver_problem_scores_exact_psro_with_the_sandboxed_solver():
    problem = MetaSolverProblem(resolve_games("kuhn_2p"), 4, 0.5, EvolveConfig(), LIMITS, {}, eval_solver="nash")
    uniform = ("class MetaSolver:\n    def solve(self, payoffs):\n"
               "        return [[1.0] * len(payoffs[0]), [1.0] * len(payoffs[0][0])]\n")
    library = run_psro_exact("kuhn_poker", train_solver="uniform", eval_solver="nash", iterations=4)
    assert problem.curve(uniform, problem.train[0], 4, (2, 4)) == pytest.approx(
        [library.nash_conv[1] / 2, library.nash_conv[3] / 2], rel=1e-9)
    assert problem.check([REGRET_MATCHING]) == [None]
    wrong = "class MetaSolver:\n    def solve(self, payoffs):\n        return [[-1.0], [1.0]]\n"
    assert "malformed" in problem.check([wrong])[0]
