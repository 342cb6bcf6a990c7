"""The CSRO loop (Algorithm 1) with a scripted oracle: population, sigma, store, resume."""

import pytest

from csro.arena import MatchArena
from csro.config import RunConfig
from csro.errors import ConfigError
from csro.evaluation.backends import LocalBackend
from csro.games import load_game
from csro.oracles import Attempt, OracleResult
from csro.policies import SandboxLimits
from csro.psro import CSRO, check_game
from csro.simulate import StoredSimulator
from csro.store import RunStore

FAST = SandboxLimits(call_seconds=5.0, match_seconds=30.0)


def always(move):
    return f"class Agent:\n    def act(self, observation):\n        return {move!r}\n"


class ScriptedOracle:
    """Returns a fixed program per iteration (None: no valid program), scored by ctx.evaluate."""

    name = "scripted"

    def __init__(self, programs):
        self.programs = programs
        self.contexts = []

    def best_response(self, ctx):
        self.contexts.append(ctx)
        k = ctx.target.iteration
        source = self.programs[k]
        if source is None:
            return OracleResult(None, None, [], "no valid program", [Attempt(f"{k}/propose/0", "propose", False, "x", None)])
        ctx.log.event("oracle_candidate", {"step": "propose"})
        return OracleResult(source, ctx.evaluate(source), [f"{k}/propose/0"], "scripted", [])


PROGRAMS = {1: always("PAPER"), 2: None, 3: always("PAPER"), 4: always("SCISSORS")}


def _loop(store, oracle, events=None, **overrides):
    config = RunConfig(game="rrps(num_throws=20)", iterations=4, initial_policy="builtin:rockbot",
                       matches_per_cell=2, oracle={"kind": "zero_shot"}, **overrides)
    game = load_game(config.game)
    sim = StoredSimulator(game, store, LocalBackend(1), seed=config.seed, limits=FAST)
    seen = []

    def on_iteration(k, specs, sigma):
        seen.append((k, [s.name for s in specs]))
        return {"hook": k}

    loop = CSRO(config, game, store, sim, llm=None, oracle=oracle, arena=MatchArena(game, sim, matches=2),
                on_iteration=on_iteration,
                on_event=(lambda k, kind, data: events.append((k, kind))) if events is not None else None)
    return loop, seen


def test_algorithm_1_with_failures_and_duplicates(tmp_path):
    events = []
    oracle = ScriptedOracle(PROGRAMS)
    with RunStore.create(tmp_path / "run", {}) as store:
        loop, seen = _loop(store, oracle, events)
        population, sigma = loop.run()
        assert [r.id for r in population] == ["p0", "p1", "p2"]
        assert [r.iteration for r in population] == [0, 1, 4]
        assert population[0].ref == "builtin:rockbot" and population[2].source == always("SCISSORS")
        assert sigma == pytest.approx([1 / 3, 1 / 3, 1 / 3], abs=1e-6)  # rock, paper, scissors
        # The oracle saw sigma_{k-1}: pure rockbot first, so paper scores +20.
        first = oracle.contexts[0]
        assert [(o.name, o.weight) for o in first.target.opponents] == [("p0", 1.0)]
        assert population[1].info["utility"] == 20.0
        assert population[1].call_keys == ("1/propose/0",)
        assert (2, "oracle_failed") in events and (3, "duplicate") in events
        assert [d["iteration"] for d in store.iterations()] == [0, 1, 2, 3, 4]
        assert store.iterations()[-1]["hook"] == 4 and seen[-1] == (4, ["p0", "p1", "p2"])
        assert [s.iteration for s in store.sigmas()] == [0, 1, 2, 3, 4]
        assert store.sigmas()[-1].meta_nash_conv == pytest.approx(0.0, abs=1e-6)
        matches = len(store.matches("meta"))
        assert matches == 3 * 2  # three cells off the diagonal, two matches each


def test_resume_walks_finished_iterations_without_the_oracle(tmp_path):
    with RunStore.create(tmp_path / "run", {}) as store:
        first, _ = _loop(store, ScriptedOracle(PROGRAMS))
        population, sigma = first.run()
        counts = store.match_counts()
    with RunStore.open(tmp_path / "run") as store:
        untouched = ScriptedOracle({})  # any call would raise KeyError
        again, seen = _loop(store, untouched)
        population2, sigma2 = again.run()
        assert untouched.contexts == [] and seen == []
        assert [r.sha256 for r in population2] == [r.sha256 for r in population]
        assert list(sigma2) == list(sigma)
        assert store.match_counts() == counts


def test_resume_after_a_crash_mid_run_ends_like_an_uninterrupted_run(tmp_path):
    with RunStore.create(tmp_path / "whole", {}) as store:
        whole, whole_sigma = _loop(store, ScriptedOracle(PROGRAMS))[0].run()

    class Crash(Exception):
        pass

    class CrashingOracle(ScriptedOracle):
        def best_response(self, ctx):
            if ctx.target.iteration == 3:
                raise Crash
            return super().best_response(ctx)

    with RunStore.create(tmp_path / "part", {}) as store:
        with pytest.raises(Crash):
            _loop(store, CrashingOracle(PROGRAMS))[0].run()
        assert [d["iteration"] for d in store.iterations()] == [0, 1, 2]
    with RunStore.open(tmp_path / "part") as store:
        oracle = ScriptedOracle(PROGRAMS)
        part, part_sigma = _loop(store, oracle)[0].run()
        assert [c.target.iteration for c in oracle.contexts] == [3, 4]
    assert [r.sha256 for r in part] == [r.sha256 for r in whole]
    assert list(part_sigma) == list(whole_sigma)


def test_games_the_symmetric_loop_cannot_play_are_refused():
    with pytest.raises(ConfigError, match="two-player zero-sum.*3 players"):
        check_game(load_game("kuhn_poker(players=3)"))
    with pytest.raises(ConfigError, match="general_sum"):
        check_game(load_game("matrix_pd"))
    check_game(load_game("kuhn_poker"))
