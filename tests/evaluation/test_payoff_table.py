import math

import numpy as np
import pytest

from csro.evaluation.payoff_table import Mixture, PayoffTable


def test_cell_statistics_match_numpy():
    values = [3.0, -1.0, 4.0, 1.5, -5.0]
    table = PayoffTable()
    for v in values:
        table.add("a", "b", v)
    cell = table.cell("a", "b")
    assert cell.count == 5
    assert cell.mean == pytest.approx(np.mean(values))
    assert cell.variance == pytest.approx(np.var(values, ddof=1))
    assert cell.sem == pytest.approx(np.std(values, ddof=1) / math.sqrt(5))


def test_forfeits_counted_per_reason():
    table = PayoffTable()
    table.add("a", "b", -1000, "timeout")
    table.add("a", "c", -1000, "timeout")
    table.add("a", "c", -1000, "crash")
    table.add("a", "c", 5)
    assert table.forfeits("a") == {"timeout": 2, "crash": 1}
    assert table.count("a", "c") == 3


def test_mixture_value_is_sigma_weighted_expectation():
    table = PayoffTable()
    table.add("x", "o", 10.0)
    table.add("y", "o", -2.0)
    table.add("o", "x", -10.0)
    table.add("o", "y", 2.0)
    mix = Mixture({"x": 0.25, "y": 0.75})
    assert table.value(mix, "o") == pytest.approx(0.25 * 10 - 0.75 * 2)
    assert table.value("o", mix) == pytest.approx(-(0.25 * 10 - 0.75 * 2))


def test_mixture_normalises_and_rejects_negative():
    assert Mixture({"a": 2.0, "b": 2.0}).weights == {"a": 0.5, "b": 0.5}
    assert Mixture.of(["a", "b"], [1.0, 0.0]).weights == {"a": 1.0}
    with pytest.raises(ValueError):
        Mixture({"a": -1.0, "b": 2.0})


def test_roundtrip_and_merge():
    t1, t2 = PayoffTable(), PayoffTable()
    t1.add("a", "b", 1.0, "crash")
    t2.add("a", "b", 3.0)
    again = PayoffTable.from_dict(t1.to_dict())
    again.merge(t2)
    assert again.mean("a", "b") == pytest.approx(2.0)
    assert again.count("a", "b") == 2
    assert again.forfeits("a") == {"crash": 1}


def test_missing_cell_names_the_pair():
    with pytest.raises(KeyError, match="'a' vs 'z'"):
        PayoffTable().mean("a", "z")
