"""Scoring sigma-mixtures against the evaluation population, in the run's eval phase."""

import pytest

from csro.config import EvaluationConfig
from csro.evaluation.backends import LocalBackend
from csro.evaluation.policy_ref import code_policy, resolve
from csro.games import load_game
from csro.policies import SandboxLimits
from csro.scoring import Scorer
from csro.simulate import StoredSimulator
from csro.store import RunStore

FAST = SandboxLimits(call_seconds=5.0, match_seconds=30.0)


def always(game, move):
    return code_policy(move.lower(), f"class Agent:\n    def act(self, observation):\n        return {move!r}\n", game)


@pytest.fixture
def store(tmp_path):
    with RunStore.create(tmp_path / "run", {}) as s:
        yield s


def _scorer(game, store, **config):
    sim = StoredSimulator(game, store, LocalBackend(1), seed=0, limits=FAST)
    return Scorer(game, sim, EvaluationConfig(**config))


def test_only_sigma_support_is_played_and_the_mixture_scored(store):
    game = load_game("rrps(num_throws=50)")
    # Evaluation population: rockbot and "paper"; members: "paper" and "scissors".
    scorer = _scorer(game, store, population=["builtin:rockbot"], matches_per_opponent=2)
    paper, scissors = always(game, "PAPER"), always(game, "SCISSORS")
    scorer.opponents.append(paper)
    pure = scorer.score([paper, scissors], [1.0, 0.0])
    assert pure["pop_return"] == pytest.approx(25.0)  # +50 against rockbot, 0 against itself
    assert {n for r in store.matches("eval") for n in r.policies} == {"paper", "builtin:rockbot"}
    mixed = scorer.per_iteration(1, [[paper, scissors]], [[0.5, 0.5]])
    assert set(mixed) == {"pop_return", "pop_expl", "agg_score", "ci95"}
    # vs rockbot: (50 - 50) / 2 = 0; vs paper: (0 + 50) / 2 = 25.
    assert mixed["pop_return"] == pytest.approx(12.5)
    assert mixed["pop_expl"] == pytest.approx(0.0)  # rockbot gets 0 against it, paper -25
    assert len(store.matches("eval")) == 8  # paper's cells were not played again


def test_a_named_population_scores_sigma_on_its_bots_issue_40(store):
    from csro.errors import ConfigError
    from csro.games.rrps import HELDOUT_BOTS

    game = load_game("rrps(num_throws=50)")
    scorer = _scorer(game, store, population="bots-heldout")
    assert [o.name for o in scorer.opponents] == [f"builtin:{n}" for n in HELDOUT_BOTS]
    with pytest.raises(ConfigError, match="unknown evaluation population 'heldout'"):
        _scorer(game, store, population="heldout")


def test_every_iteration_can_be_switched_off(store):
    game = load_game("rrps(num_throws=10)")
    scorer = _scorer(game, store, population=["builtin:rockbot"], every_iteration=False)
    assert scorer.per_iteration(1, [[always(game, "PAPER")]], [[1.0]]) == {}
    assert store.matches("eval") == []


def test_final_adds_population_sigma_and_exact_nash_conv(store):
    game = load_game("kuhn_poker")
    scorer = _scorer(game, store, matches_per_opponent=2)
    random = resolve("builtin:random", game)
    final = scorer.final([[random]], [[1.0]])
    assert final["population"] == ["builtin:random"] and final["sigma"] == {"builtin:random": 1.0}
    assert final["matches_per_opponent"] == 2
    assert final["nash_conv"] == pytest.approx(11 / 12)  # uniform play in Kuhn poker
    assert final["nash_conv_note"] is None


def test_final_says_why_there_is_no_nash_conv(store):
    game = load_game("rrps(num_throws=10)")
    scorer = _scorer(game, store, population=["builtin:rockbot"], matches_per_opponent=1)
    final = scorer.final([[always(game, "PAPER")]], [[1.0]])
    assert final["nash_conv"] is None and final["nash_conv_note"].startswith("not computed: ")
    off = _scorer(game, store, population=["builtin:rockbot"], exact_nash_conv=False)
    assert off.final([[always(game, "PAPER")]], [[1.0]])["nash_conv_note"].startswith("not requested")
