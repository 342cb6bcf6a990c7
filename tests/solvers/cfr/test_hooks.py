"""The hook interface: abstract base classes, a user hook class, output validation."""

import numpy as np
import pytest

from csro.errors import ConfigError
from csro.solvers.cfr import (
    CFRSolver,
    PolicyFromRegretAccumulator,
    RegretAccumulator,
    Variant,
    load_tree,
    make_variant,
    normalize_rows,
    regret_matching,
)


class MyRegretMatchingPlus(RegretAccumulator):
    """A user's CFR+ regret rule, written against the public interface."""

    def __init__(self):
        self.calls = []

    def update_accumulate_regret(self, block, t, regrets):
        self.calls.append((block.player, t, regrets.shape))
        assert not regrets.flags.writeable  # inputs are read-only
        out = block.cumulative_regret  # in-place update of the block's array is allowed
        out += regrets
        np.maximum(out, 0.0, out=out)
        return out


def test_user_regret_hook_reproduces_cfr_plus():
    tree = load_tree("leduc_poker")
    base = make_variant("cfr+", 20)
    mine = MyRegretMatchingPlus()
    ours = CFRSolver(tree, Variant("mine", mine, base.policy, base.average))
    ref = CFRSolver(tree, make_variant("cfr+", 20))
    ours.run(20)
    ref.run(20)
    assert ours.nash_conv() == pytest.approx(ref.nash_conv(), abs=1e-12)
    # called once per player per iteration, with all the player's infosets at once
    assert len(mine.calls) == 40
    assert mine.calls[0] == (0, 0, tree.players[0].actions.shape)


def test_hook_classes_are_abstract():
    with pytest.raises(TypeError):
        RegretAccumulator()

    class Incomplete(PolicyFromRegretAccumulator):
        pass

    with pytest.raises(TypeError):
        Incomplete()


class WrongShape(RegretAccumulator):
    def update_accumulate_regret(self, block, t, regrets):
        return regrets[:, :1]


class NotNormalised(PolicyFromRegretAccumulator):
    def get_updated_current_policy(self, block, t, regrets, previous_policy):
        return np.maximum(block.cumulative_regret, 0.0)


def test_bad_hook_outputs_raise_config_error():
    base = make_variant("cfr", 1)
    with pytest.raises(ConfigError, match="shape"):
        CFRSolver("kuhn_poker", Variant("bad", WrongShape(), base.policy, base.average)).step()
    with pytest.raises(ConfigError, match="sum to 1"):
        CFRSolver("kuhn_poker", Variant("bad", base.regret, NotNormalised(), base.average)).step()


def test_regret_matching_and_normalisation_helpers():
    legal = np.array([[True, True, True], [True, True, False]])
    r = np.array([[1.0, -2.0, 3.0], [-1.0, -1.0, 0.0]])
    np.testing.assert_allclose(regret_matching(r, legal), [[0.25, 0, 0.75], [0.5, 0.5, 0]])
    np.testing.assert_allclose(normalize_rows(np.array([[1e-13, 0, 0], [2, 2, 0]]), legal,
                                              threshold=1e-12),
                               [[1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0]])
