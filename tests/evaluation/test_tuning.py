"""The guard's tuning (issue 40): it plays the training bots only, and chooses the best row."""

from __future__ import annotations

import math

import pytest

from csro.evaluation import evaluate, resolve
from csro.evaluation.metrics import PopulationScore
from csro.evaluation.policy_ref import code_policy
from csro.evaluation.tuning import GuardRow, GuardSetting, GuardTuning, rule_programs, tune_guard
from csro.games import load_game
from csro.games.rrps import HELDOUT_BOTS, TRAINING_BOTS, RoshamboBot, rule_header


@pytest.fixture
def held_out_bots_refuse(monkeypatch):
    """Every held-out bot's construction raises, here and in the runner's forked processes."""
    construct = RoshamboBot.instance

    def instance(self, seat, seed):
        if self.name in HELDOUT_BOTS:
            raise RuntimeError(f"held-out bot {self.name} played")
        return construct(self, seat, seed)

    monkeypatch.setattr(RoshamboBot, "instance", instance)


def test_the_instrument_catches_a_held_out_bot(held_out_bots_refuse):
    game = load_game("rrps(num_throws=20)")
    body = rule_programs(1, 0)[0]
    with pytest.raises(RuntimeError, match="held-out bot greenberg played"):
        evaluate(game, [code_policy("p", rule_header() + body, game)], [resolve("builtin:greenberg", game)],
                 matches=1, seed=0, processes=1)


def test_tuning_plays_the_training_bots_only_issue_40(held_out_bots_refuse):
    game = load_game("rrps(num_throws=20)")
    grid = [GuardSetting(0.9, 0), GuardSetting(0.95, -math.inf)]
    tuning = tune_guard(game, rule_programs(2, 0), grid, matches=1, seed=0, processes=1)
    assert tuning.population == tuple(f"builtin:{n}" for n in TRAINING_BOTS)
    assert [r.setting for r in tuning.rows] == grid
    for row in tuning.rows:
        assert len(row.scores) == 2
        assert all(set(s.per_opponent) == set(tuning.population) for s in row.scores)
    assert tuning.chosen in grid


def _row(setting: GuardSetting, *agg: float) -> GuardRow:
    return GuardRow(setting, tuple(PopulationScore("p", a, 0.0, a, 0.0, 0.0, 0.0, "o", 1, 1, {}) for a in agg))


def test_the_chosen_setting_has_the_best_mean_agg_score_first_on_a_tie():
    a, b, c = GuardSetting(0.9, 1), GuardSetting(0.95, 3), GuardSetting(0.99, 3)
    assert GuardTuning((), (_row(a, -10, 10), _row(b, 5, 7), _row(c, 12, -2))).chosen == b
    assert GuardTuning((), (_row(a, 6, 6), _row(b, 5, 7))).chosen == a
