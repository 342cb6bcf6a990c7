"""The CSRO loop (Algorithm 1) with a scripted oracle: population, sigma, store, resume."""

import pytest

from csro.arena import MatchArena
from csro.config import RunConfig
from csro.evaluation.backends import LocalBackend
from csro.games import load_game
from csro.oracles import Attempt, OracleResult
from csro.policies import SandboxLimits
from csro.metagame import symmetric
from csro.psro import CSRO
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

    def on_iteration(k, specs, sigmas):
        seen.append((k, [s.name for s in specs[0]]))
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
        [population], final = loop.run()
        [sigma] = final.sigmas
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
        table = store.population_table()
        assert [table.count(a, b) for a, b in [("p1", "p0"), ("p2", "p0"), ("p2", "p1")]] == [2, 2, 2]


def test_the_matches_the_oracle_measured_are_the_new_members_cells(tmp_path):
    """A candidate's matches are played once (issue 27): its evaluation against sigma's support
    (phase oracle) is the cells of the member it becomes, and joining the population plays only
    the cell the oracle did not measure."""
    oracle = ScriptedOracle(PROGRAMS)
    with RunStore.create(tmp_path / "run", {}) as store:
        [population], _ = _loop(store, oracle)[0].run()
        p0, p1, p2 = population
        # p1 was measured against sigma_0 = p0, p2 against sigma_3 = p1: both joined without a match
        assert len(store.matches("oracle", {p1.info["played_as"], "p0"})) == 2
        assert len(store.matches("oracle", {p2.info["played_as"], "p1"})) == 2
        meta = store.matches("meta")
        assert len(meta) == 2 and {frozenset(r.policies) for r in meta} == {frozenset((p2.info["played_as"], "p0"))}
        assert not {r.seed for r in meta} & {r.seed for r in store.matches("oracle")}  # no match played twice
        # the meta-game uses them: U[p1, p0] is the oracle's utility of p1, from the same two matches
        last = store.events("sigma")[-1]["data"]
        assert last["u"][1][0] == p1.info["utility"] == 20.0
        assert last["u"][2][1] == p2.info["utility"]
        assert last["u_matches"] == [[0, 2, 2], [2, 0, 2], [2, 2, 0]]


def test_resume_walks_finished_iterations_without_the_oracle(tmp_path):
    with RunStore.create(tmp_path / "run", {}) as store:
        first, _ = _loop(store, ScriptedOracle(PROGRAMS))
        [population], final = first.run()
        [sigma] = final.sigmas
        counts = store.match_counts()
    with RunStore.open(tmp_path / "run") as store:
        untouched = ScriptedOracle({})  # any call would raise KeyError
        again, seen = _loop(store, untouched)
        [population2], final2 = again.run()
        [sigma2] = final2.sigmas
        assert untouched.contexts == [] and seen == []
        assert [r.sha256 for r in population2] == [r.sha256 for r in population]
        assert list(sigma2) == list(sigma)
        assert store.match_counts() == counts


@pytest.mark.slow
def test_resume_after_a_crash_mid_run_ends_like_an_uninterrupted_run(tmp_path):
    with RunStore.create(tmp_path / "whole", {}) as store:
        [whole], final = _loop(store, ScriptedOracle(PROGRAMS))[0].run()
        [whole_sigma] = final.sigmas

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
        [part], final = _loop(store, oracle)[0].run()
        [part_sigma] = final.sigmas
        assert [c.target.iteration for c in oracle.contexts] == [3, 4]
    assert [r.sha256 for r in part] == [r.sha256 for r in whole]
    assert list(part_sigma) == list(whole_sigma)


def test_which_games_share_one_population():
    assert symmetric(load_game("kuhn_poker")) and symmetric(load_game("rrps(num_throws=20)"))
    assert not symmetric(load_game("kuhn_poker(players=3)"))  # n players
    assert not symmetric(load_game("ipd"))  # general-sum
    assert not symmetric(load_game("sheriff"))  # seats differ


KUHN_BET = ("class Agent:\n    def act(self, observation):\n"
            "        return 'Bet' if 'Bet' in observation['legal_actions'] else observation['legal_actions'][0]\n")
KUHN_PASS = ("class Agent:\n    def act(self, observation):\n"
             "        return 'Pass' if 'Pass' in observation['legal_actions'] else observation['legal_actions'][0]\n")


class SeatOracle:
    """Player p's program at iteration k from a table; records what each call was given."""

    name = "scripted"
    per_player = True

    def __init__(self, programs):
        self.programs = programs
        self.targets = []

    def best_response(self, ctx):
        self.targets.append(ctx.target)
        source = self.programs.get((ctx.target.iteration, ctx.target.player))
        if source is None:
            return OracleResult(None, None, [], "none", [])
        assert ctx.check([source]) == [None]
        return OracleResult(source, ctx.evaluate(source), [str(ctx.llm.request("propose", []).key)], "scripted", [])


@pytest.mark.slow
def test_three_players_get_one_population_and_sigma_each(tmp_path):
    programs = {(1, 0): KUHN_BET, (1, 2): KUHN_PASS, (2, 1): KUHN_BET}
    oracle = SeatOracle(programs)
    config = RunConfig(game="kuhn_poker(players=3)", iterations=2, initial_policy="builtin:random",
                       matches_per_cell=2, meta_solver="prd", oracle={"kind": "zero_shot"})
    game = load_game(config.game)
    with RunStore.create(tmp_path / "run", {}) as store:
        sim = StoredSimulator(game, store, LocalBackend(1), seed=config.seed, limits=FAST)
        loop = CSRO(config, game, store, sim, llm=None, oracle=oracle, arena=MatchArena(game, sim, matches=2))
        populations, final = loop.run()
        sigmas = final.sigmas
        assert [[r.id for r in p] for p in populations] == [["p0-0", "p0-1"], ["p1-0", "p1-1"], ["p2-0", "p2-1"]]
        assert [len(s) for s in sigmas] == [2, 2, 2] and all(abs(sum(s) - 1) < 1e-9 for s in sigmas)
        assert populations[2][1].call_keys == ("1/seat2-propose/0",)
        # every profile of the final populations was played, each policy in its own seat; a
        # profile with one new member is the matches its oracle measured it by (phase oracle)
        assert store.events("sigma")[-1]["data"]["u_matches"] == [[[2, 2], [2, 2]], [[2, 2], [2, 2]]]
        names = [{n for r in population for n in (r.id, r.info.get("played_as"))} for population in populations]
        seated = {m.policies for m in store.matches("meta")}
        assert len(seated) == 2 and all(s[p] in names[p] for s in seated for p in range(3))
        # player 1 at iteration 1 answered the other seats' profiles, its own seat left empty
        target = next(t for t in oracle.targets if t.iteration == 1 and t.player == 1)
        assert [pr.members[1] for pr in target.profiles] == [None]
        assert [s.player for s in store.sigmas() if s.iteration == 2] == [0, 1, 2]


def test_per_player_populations_refuse_a_shared_population_oracle_and_a_selection(tmp_path):
    from csro.errors import ConfigError
    from csro.oracles import get_oracle

    game = load_game("kuhn_poker(players=3)")
    with RunStore.create(tmp_path / "run", {}) as store:
        sim = StoredSimulator(game, store, LocalBackend(1), seed=0, limits=FAST)
        arena = MatchArena(game, sim, matches=2)
        evolve = RunConfig(game=game.name, oracle={"kind": "evolve"})
        with pytest.raises(ConfigError, match="oracle.kind: evolve runs symmetric"):
            CSRO(evolve, game, store, sim, llm=None, oracle=get_oracle("evolve"), arena=arena)
        strongest = RunConfig(game=game.name, oracle={"kind": "zero_shot"}, meta_game={"select": "strongest"})
        with pytest.raises(ConfigError, match="meta_game.select: strongest needs a symmetric"):
            CSRO(strongest, game, store, sim, llm=None, oracle=get_oracle("zero_shot"), arena=arena)
        assert CSRO(strongest, load_game("kuhn_poker"), store, sim, llm=None, oracle=get_oracle("evolve"), arena=arena)
