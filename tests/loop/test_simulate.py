"""The run's simulator: every pair played once per run, the store as its cache."""

import numpy as np
import pytest

from csro.evaluation.policy_ref import code_policy, resolve
from csro.evaluation.backends import LocalBackend
from csro.games import load_game
from csro.policies import SandboxLimits
from csro.simulate import StoredSimulator
from csro.store import RunStore
from tests.conftest import CountingBackend

FAST = SandboxLimits(call_seconds=5.0, match_seconds=30.0)
CYCLE = """
class Agent:
    def __init__(self):
        self.t = 0
    def act(self, observation):
        self.t += 1
        return ['ROCK', 'PAPER', 'SCISSORS'][self.t % 3]
"""



@pytest.fixture(scope="module")
def game():
    return load_game("rrps(num_throws=50)")


@pytest.fixture
def pairs(game):
    cycle = code_policy("cycle", CYCLE, game)
    return [(cycle, resolve("builtin:randbot", game)), (cycle, resolve("builtin:rockbot", game))]


def test_pairs_are_played_once_and_the_store_is_the_cache(tmp_path, game, pairs):
    seen = []
    with RunStore.create(tmp_path / "run", {}) as store:
        backend = CountingBackend()
        sim = StoredSimulator(game, store, backend, seed=3, limits=FAST,
                              progress=lambda phase, done, total: seen.append((phase, done, total)))
        first = sim.play("meta", pairs, 3)
        assert backend.played == 6 and seen[-1] == ("meta", 6, 6)
        again = sim.play("meta", pairs, 3)
        assert backend.played == 6
        assert again.mean("cycle", "builtin:rockbot") == first.mean("cycle", "builtin:rockbot")
        # Another phase is another cache.
        sim.play("eval", pairs[:1], 3)
        assert backend.played == 9
    with RunStore.open(tmp_path / "run") as store:  # a resumed run plays nothing again
        backend = CountingBackend()
        table = StoredSimulator(game, store, backend, seed=3, limits=FAST).play("meta", pairs, 3)
        assert backend.played == 0
        assert table.count("cycle", "builtin:randbot") == 3
        assert table.mean("builtin:randbot", "cycle") == -first.mean("cycle", "builtin:randbot")


def test_a_partly_played_pair_ends_as_if_played_whole(tmp_path, game, pairs):
    with RunStore.create(tmp_path / "whole", {}) as store:
        whole = StoredSimulator(game, store, CountingBackend(), seed=3, limits=FAST).play("meta", pairs, 3)
    with RunStore.create(tmp_path / "part", {}) as store:
        backend = CountingBackend()
        sim = StoredSimulator(game, store, backend, seed=3, limits=FAST)
        sim.play("meta", pairs[:1], 1)  # a crash after one match of the first pair
        table = sim.play("meta", pairs, 3)
        assert table.count("cycle", "builtin:randbot") == 3
        for _, opponent in pairs:
            assert table.mean("cycle", opponent.name) == whole.mean("cycle", opponent.name)


def test_more_matches_later_plays_only_the_missing_ones(tmp_path, game, pairs):
    with RunStore.create(tmp_path / "run", {}) as store:
        backend = CountingBackend()
        sim = StoredSimulator(game, store, backend, seed=5, limits=FAST)
        sim.play("meta", pairs[:1], 3)
        table = sim.play("meta", pairs[:1], 7)
        assert backend.played == 7 and table.count("cycle", "builtin:randbot") == 7
    with RunStore.create(tmp_path / "once", {}) as store:  # the same seven matches at once
        once = StoredSimulator(game, store, LocalBackend(1), seed=5, limits=FAST).play("meta", pairs[:1], 7)
    assert once.cell("cycle", "builtin:randbot") == table.cell("cycle", "builtin:randbot")


def test_cells_are_sized_by_their_confidence_interval(tmp_path, game, pairs):
    """randbot makes a noisy cell: it gets matches until its 95% CI is narrow enough or the cap;
    rockbot a noiseless one (every match alike): it keeps the minimum."""
    with RunStore.create(tmp_path / "run", {}) as store:
        backend = CountingBackend()
        sim = StoredSimulator(game, store, backend, seed=5, limits=FAST)
        table = sim.play_sized("meta", pairs, 4, ci_width=8.0, max_matches=40)
        noisy, steady = table.cell("cycle", "builtin:randbot"), table.cell("cycle", "builtin:rockbot")
        assert steady.count == 4 and steady.variance == 0.0
        assert 4 < noisy.count <= 40
        assert noisy.count == 40 or 2 * 1.96 * noisy.sem <= 8.0
        played = backend.played
        sim.play_sized("meta", pairs, 4, ci_width=8.0, max_matches=40)  # sized already: nothing more
        assert backend.played == played == noisy.count + steady.count


def test_support_changes_under_resampling():
    from csro.metagame import EmpiricalGame, support_changes

    names = ("a", "b", "c")
    dominant = np.array([[0.0, 30.0, 30.0], [-30.0, 0.0, 1.0], [-30.0, -1.0, 0.0]])
    tight = EmpiricalGame(names, dominant, np.full((3, 3), 0.5), np.full((3, 3), 100))
    assert support_changes(tight, "nash", np.array([1.0, 0.0, 0.0]), 40, seed=1) == 0.0
    near_tie = np.array([[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]]) * 0.5
    noisy = EmpiricalGame(names, near_tie, np.full((3, 3), 13.0), np.full((3, 3), 4))
    assert support_changes(noisy, "nash", np.array([1 / 3, 1 / 3, 1 / 3]), 40, seed=1) > 0.3
