"""The run's simulator: every pair played once per run, the store as its cache."""

import pytest

from csro.evaluation.backends import LocalBackend
from csro.evaluation.policy_ref import code_policy, resolve
from csro.games import load_game
from csro.policies import SandboxLimits
from csro.simulate import StoredSimulator
from csro.store import RunStore

FAST = SandboxLimits(call_seconds=5.0, match_seconds=30.0)
CYCLE = """
class Agent:
    def __init__(self):
        self.t = 0
    def act(self, observation):
        self.t += 1
        return ['ROCK', 'PAPER', 'SCISSORS'][self.t % 3]
"""


class CountingBackend(LocalBackend):
    """The real local pool, counting the matches it is asked to play."""

    def __init__(self):
        super().__init__(1)
        self.played = 0

    def run(self, chunks, progress=None):
        results = super().run(chunks, progress)
        self.played += len(results)
        return results


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
