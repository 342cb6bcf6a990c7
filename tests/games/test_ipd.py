"""The iterated prisoner's dilemma against the axelrod library, checked against the library itself."""

import json
import subprocess
import sys

import pytest

from csro.evaluation import code_policy, evaluate, play_chunk, resolve, round_robin
from csro.evaluation.runner import Chunk, MatchJob, SeatRef
from csro.games import load_game
from csro.games.ipd import EXAMPLE_POLICY, _axelrod, each_source_read_once
from tests.conftest import check_program
from csro.policies import SandboxLimits

# deterministic classics: our matches must equal the library's exactly
CLASSICS = ["TitForTat", "Defector", "Cooperator", "Grudger", "WinStayLoseShift", "Alternator",
            "SuspiciousTitForTat", "TitFor2Tats"]
TURNS = 200


def axl():
    """The axelrod library, imported where a test uses it and as csro imports it: its import
    takes seconds, which every pytest worker would otherwise pay while collecting, whether or
    not it runs this file (issue 39)."""
    return _axelrod()


@pytest.fixture(scope="module")
def ipd():
    return load_game("ipd")


def _library_score(a: str, b: str, turns: int = TURNS) -> tuple[float, float]:
    match = axl().Match((getattr(axl(), a)(), getattr(axl(), b)()), turns=turns)
    match.play()
    return match.final_score()


def _play(game, a: str, b: str, seed: int) -> tuple[float, ...]:
    seats = tuple(SeatRef.of(resolve(f"builtin:{n}", game)) for n in (a, b))
    (result,) = play_chunk(Chunk(game.name, (MatchJob(seats, seed),), SandboxLimits()))
    return result.returns


def test_game_basics(ipd):
    assert ipd.name == "ipd" and ipd.num_players == 2 and not ipd.zero_sum
    assert ipd.return_range == (0.0, 1000.0)
    assert len(ipd.population()) == len(axl().short_run_time_strategies) == 224
    short = load_game("ipd(turns=10)")
    assert short.name == "ipd(turns=10)" and "10 rounds" in short.rules_text
    assert "'C' | 'D'" in ipd.api_spec


@pytest.mark.slow  # every strategy classified twice: make test (issue 39, the fast loop's minutes)
@pytest.mark.filterwarnings("ignore:Classifiers are intended to run on player instances")  # axelrod's own, per class
def test_axelrod_classifies_its_strategies_alike_when_each_source_is_read_once():
    """csro imports axelrod with ``each_source_read_once``: every strategy's ``makes_use_of``
    (the classifier axelrod computes from method sources) is the same with the cached reader
    as with ``inspect.getsource`` itself, and the cache answers the repeats."""
    makes_use_of = axl().Classifiers["makes_use_of"]
    strategies = axl().all_strategies
    plain = [makes_use_of(s) for s in strategies]
    with each_source_read_once() as read:
        cached = [makes_use_of(s) for s in strategies]
    assert cached == plain and any(plain)
    assert read.cache_info().hits > 0


@pytest.mark.parametrize("a", CLASSICS[:4])
def test_matches_equal_the_library(ipd, a):
    for b in CLASSICS:
        assert _play(ipd, a, b, seed=1) == pytest.approx(_library_score(a, b))


def test_classic_figures(ipd):
    # Tit For Tat vs Defector: suckered once (0), then mutual defection (1 x 199) against
    # 5 + 199; vs Cooperator: 3 per round for both.
    assert _play(ipd, "TitForTat", "Defector", 0) == (199.0, 204.0)
    assert _play(ipd, "Defector", "TitForTat", 0) == (204.0, 199.0)
    assert _play(ipd, "TitForTat", "Cooperator", 0) == (600.0, 600.0)


def test_tournament_equals_the_library(ipd):
    players = [resolve(f"builtin:{n}", ipd) for n in CLASSICS]
    ours = round_robin(ipd, players, matches=2, seed=0, processes=1)
    library = axl().Tournament([getattr(axl(), n)() for n in CLASSICS], turns=TURNS, repetitions=1,
                             seed=0).play(progress_bar=False)
    per_turn = ours.per_turn(TURNS)
    for i, n in enumerate(CLASSICS):
        assert per_turn[f"builtin:{n}"] == pytest.approx(library.normalised_scores[i][0], abs=1e-12)
    to_library = {f"builtin:{n}": str(getattr(axl(), n)()) for n in CLASSICS}
    assert [to_library[p] for p in ours.ranking] == library.ranked_names
    assert ours.rank("builtin:TitForTat") == 1  # Axelrod's famous winner wins this small field too


def test_code_policy_plays_like_the_library_strategy(ipd):
    tft = code_policy("tft", EXAMPLE_POLICY, ipd)
    opponents = [resolve(f"builtin:{n}", ipd) for n in CLASSICS]
    ev = evaluate(ipd, [tft], opponents, matches=2, seed=3, processes=1)
    for n in CLASSICS:
        assert ev.table.mean("tft", f"builtin:{n}") == pytest.approx(_library_score("TitForTat", n)[0])
        assert ev.table.mean(f"builtin:{n}", "tft") == pytest.approx(_library_score(n, "TitForTat")[0])


def test_stochastic_strategies_are_seeded(ipd):
    a = [_play(ipd, "Random", "TitForTat", seed) for seed in (5, 5, 6)]
    assert a[0] == a[1] and a[0] != a[2]
    # Random cooperates half the time: 4 per round on average against Cooperator
    # (5 or 3); per-round sd 1, so 8 matches of 200 rounds have sd 0.025 per round.
    mean = sum(_play(ipd, "Random", "Cooperator", s)[0] for s in range(8)) / (8 * TURNS)
    assert mean == pytest.approx(4.0, abs=0.15)


def test_illegal_action_forfeits(ipd):
    bad = code_policy("bad", "class Agent:\n    def act(self, o):\n        return 'cooperate'\n", ipd)
    ev = evaluate(ipd, [bad], [resolve("builtin:Cooperator", ipd)], matches=2, seed=0, processes=1)
    assert ev.table.mean("bad", "builtin:Cooperator") == 0.0
    assert sum(ev.table.forfeits("bad").values()) == 2


@pytest.mark.slow  # ~23 s: a fresh interpreter imports axelrod (torch, dask)
def test_cli_eval_against_builtins():
    proc = subprocess.run([sys.executable, "-m", "csro", "eval", "--game", "ipd", "--policy", "builtin:TitForTat",
                           "--opponents", "builtin:Defector,builtin:Cooperator", "--matches", "2", "--json"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads(proc.stdout)["results"]
    assert entry["per_opponent"] == {"builtin:Defector": 199.0, "builtin:Cooperator": 600.0}


def test_example_policy_passes_the_check(ipd):
    assert check_program(ipd, EXAMPLE_POLICY) is None
    error = check_program(ipd, "class Agent:\n    def act(self, o):\n        return 'X'\n")
    assert error is not None and "illegal" in error


def test_ranking_a_new_entrant_reuses_the_population_table(ipd):
    population = [resolve(f"builtin:{n}", ipd) for n in CLASSICS[1:]]
    base = round_robin(ipd, population, matches=2, seed=4, processes=1)
    entrant = code_policy("tft", EXAMPLE_POLICY, ipd)
    full = round_robin(ipd, [entrant, *population], matches=2, seed=4, processes=1)
    reused = round_robin(ipd, [entrant, *population], matches=2, seed=4, processes=1, known=base.table)
    assert reused.scores == full.scores and reused.ranking == full.ranking
    assert full.rank("tft") == 1  # Tit For Tat written as code wins as the library's does
