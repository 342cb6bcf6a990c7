import pytest

from csro.errors import ConfigError
from csro.solvers.cfr import ALGORITHMS, Variant, make_variant


def test_registry_names_and_fresh_instances():
    assert list(ALGORITHMS) == ["cfr", "cfr+", "lcfr", "dcfr", "pcfr+", "dpcfr+", "hs-pcfr+",
                                "vad-cfr", "aod-cfr", "wop-cfr"]
    for name in ALGORITHMS:
        a, b = make_variant(name, 100), make_variant(name, 100)
        assert isinstance(a, Variant) and a.name == name
        assert a.regret is not b.regret  # hooks carry state: one instance per run


def test_unknown_algorithm_lists_valid_names():
    with pytest.raises(ConfigError, match=r"unknown CFR algorithm 'cfr\+\+'; valid: cfr, cfr\+"):
        make_variant("cfr++", 10)
