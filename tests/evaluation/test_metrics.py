import pytest

from csro.evaluation.metrics import population_score
from csro.evaluation.payoff_table import Mixture, PayoffTable


def _zero_sum(table, a, b, values):
    for v in values:
        table.add(a, b, v)
        table.add(b, a, -v)


def test_pop_return_expl_agg_from_definitions():
    table = PayoffTable()
    _zero_sum(table, "pi", "o1", [10, 20])   # pi gets 15 vs o1
    _zero_sum(table, "pi", "o2", [-4, -6])   # pi gets -5 vs o2: o2 exploits pi by 5
    score = population_score(table, "pi", ["o1", "o2"])
    assert score.pop_return == pytest.approx(5.0)
    assert score.pop_expl == pytest.approx(5.0)
    assert score.worst_opponent == "o2"
    assert score.agg_score == pytest.approx(0.0)
    assert score.matches == 4 and score.min_matches_per_cell == 2
    assert score.per_opponent == {"o1": pytest.approx(15.0), "o2": pytest.approx(-5.0)}


def test_confidence_interval_shrinks_with_matches():
    few, many = PayoffTable(), PayoffTable()
    _zero_sum(few, "pi", "o", [1, -1] * 2)
    _zero_sum(many, "pi", "o", [1, -1] * 200)
    assert population_score(many, "pi", ["o"]).ci95_return < population_score(few, "pi", ["o"]).ci95_return / 5


def test_mixture_score():
    table = PayoffTable()
    _zero_sum(table, "a", "o", [2.0])
    _zero_sum(table, "b", "o", [-2.0])
    score = population_score(table, Mixture({"a": 0.5, "b": 0.5}), ["o"], name="sigma")
    assert score.policy == "sigma"
    assert score.pop_return == pytest.approx(0.0)
    assert score.pop_expl == pytest.approx(0.0)
