"""The evolve oracle over the real sandbox and a real run store, with a scripted LLM and an
arena whose ``play`` counts (our own logic is faked; matches are counted, not simulated;
checks run in the real sandbox)."""

import dataclasses
import hashlib

import pytest

from csro.arena import MatchArena
from csro.config import OracleConfig
from csro.evaluation import code_policy, resolve
from csro.evaluation.backends import LocalBackend
from csro.games import load_game
from csro.llm import LLMReply, LLMSession
from csro.oracles import Opponent, OracleContext, Target
from csro.oracles.evolve import Evolve
from csro.policies import SandboxLimits
from csro.store import StoreLog
from csro.simulate import StoredSimulator
from csro.store import RunStore, SigmaRecord

MOVES = ["ROCK", "PAPER", "SCISSORS"]


def policy(move: str, tag: int) -> str:
    return f'class Agent:\n    """Plays {move}."""\n\n    def act(self, observation):\n        return "{move}"  # {tag}\n'


class LLM:
    """A rewrite per call, chosen by the call key (so a resumed run gets the same replies)."""

    grammar = False

    def __init__(self):
        self.keys = []

    def complete_many(self, requests):
        out = []
        for r in requests:
            self.keys.append(str(r.key))
            n = int(hashlib.sha256(str(r.key).encode()).hexdigest(), 16)
            out.append(LLMReply(r.key, f"```python\n{policy(MOVES[n % 3], n % 97)}```", "fake", "fake"))
        return out

    def complete(self, request):
        return self.complete_many([request])[0]


class CountingPlay:
    """An arena: real sandboxed checks; play scores from a hash of (program, opponent),
    recording every cell asked for."""

    matches = 2

    def __init__(self):
        self.cells = []
        self.real: MatchArena | None = None

    def check(self, sources, seat=None):
        return self.real.check(sources, seat)

    def play(self, sources, opponents, matches=None):
        out = []
        for s in sources:
            row = {}
            for o in opponents:
                self.cells.append((s, o.name))
                row[o.name] = int(hashlib.sha256(f"{s}|{o.name}".encode()).hexdigest(), 16) % 200 - 100.0
            out.append(row)
        return out


@pytest.fixture(scope="module")
def game():
    return load_game("rrps(num_throws=50)")


def context(game, store, iteration, opponents, play, llm):
    play.real = MatchArena(game, StoredSimulator(game, store, LocalBackend(1), seed=11, limits=SandboxLimits()), matches=2)
    return OracleContext(
        game=game, target=Target(iteration, 0, tuple(opponents)), llm=LLMSession(llm, iteration, 0.7, 11), arena=play,
        config=OracleConfig(kind="evolve", prompt="plain",
                            evolve={"islands": 2, "population_size": 2, "generations": 2}),
        log=StoreLog(store, iteration, 0, lambda kind, data: store.add_event(iteration, kind, data)))


def opponents_after(game, result_source):
    p0 = resolve("builtin:random", game)
    p1 = code_policy("p1", result_source, game)
    return [Opponent("p0", 0.5, p0, "uniform random"), Opponent("p1", 0.5, p1)]


def test_a_sigma_change_simulates_only_the_cells_against_the_new_opponent(game, tmp_path):
    store = RunStore.create(tmp_path / "run", {"test": True})
    play, llm, oracle = CountingPlay(), LLM(), Evolve()
    first = oracle.best_response(context(game, store, 1, [Opponent("p0", 1.0, resolve("builtin:random", game))], play, llm))
    assert first.source is not None and first.feedback.utility == oracle.db.fitness(
        next(p.id for p in oracle.db.programs.values() if p.source == first.source))
    elites = oracle.db.elites()
    before = len(play.cells)
    store.add_sigma(SigmaRecord(0, 0, ("p0",), (1.0,), "nash", 0.0))
    store.add_sigma(SigmaRecord(1, 0, ("p0", "p1"), (0.5, 0.5), "nash", 0.0))
    oracle.best_response(context(game, store, 2, opponents_after(game, first.source), play, llm))
    rescored = [e["data"] for e in store.events("evolve_rescored") if e["iteration"] == 2][0]
    carried = play.cells[before:before + rescored["cells_simulated"]]
    # exactly one new cell per carried elite, all against p1; none against p0 again
    assert rescored["cells_simulated"] == len(elites) > 0
    assert sorted(carried) == sorted((p.source, "p1") for p in elites)
    assert rescored["programs"] >= len(elites)
    for p in elites:
        assert set(oracle.db.programs[p.id].scores) == {"p0", "p1"}


def test_a_fresh_oracle_restores_the_archive_from_the_store(game, tmp_path):
    """What a resumed run does: the iteration-2 call made by a new oracle over the same store."""
    results = []
    for run in ("same-oracle", "new-oracle"):
        store = RunStore.create(tmp_path / run, {"test": True})
        store.add_sigma(SigmaRecord(0, 0, ("p0",), (1.0,), "nash", 0.0))
        store.add_sigma(SigmaRecord(1, 0, ("p0", "p1"), (0.5, 0.5), "nash", 0.0))
        llm, play, oracle = LLM(), CountingPlay(), Evolve()
        first = oracle.best_response(context(game, store, 1, [Opponent("p0", 1.0, resolve("builtin:random", game))], play, llm))
        if run == "new-oracle":
            oracle = Evolve()
        second = oracle.best_response(context(game, store, 2, opponents_after(game, first.source), play, llm))
        results.append((first.source, second.source, second.feedback.utility, len(oracle.db.programs)))
    assert results[0] == results[1]


def test_programs_are_stored_with_lineage_and_failures(game, tmp_path):
    store = RunStore.create(tmp_path / "run", {"test": True})

    class Mixed(LLM):
        def complete_many(self, requests):
            replies = super().complete_many(requests)
            replies[0] = LLMReply(requests[0].key, "<<<<<<< SEARCH\nnope\n=======\nx\n>>>>>>> REPLACE", "fake", "fake")
            return replies

    oracle = Evolve()
    result = oracle.best_response(context(game, store, 1, [Opponent("p0", 1.0, resolve("builtin:random", game))],
                                          CountingPlay(), Mixed()))
    stored = {p["id"]: p for p in store.programs()}
    assert set(stored) == set(oracle.db.programs)
    assert any(p["status"] == "apply_failed" or p["status"] == "no_code" for p in stored.values())
    child = next(p for p in stored.values() if p["mutation"] == "rewrite" and p["status"] in ("ok", "not_promising"))
    assert child["parent"] in stored and child["call_key"].startswith("1/evolve-")
    assert all(k.startswith("1/evolve-") for k in result.call_keys)


def test_each_program_records_its_author_and_the_answer_carries_it_issue_26(game, tmp_path):
    """Seeds are the game's example, rewrites the model's (the grammar's when decoded under it);
    the answer's author is its program's, and with no generation it is the example."""
    store = RunStore.create(tmp_path / "run", {"test": True})
    p0 = [Opponent("p0", 1.0, resolve("builtin:random", game))]
    oracle = Evolve()
    result = oracle.best_response(context(game, store, 1, p0, CountingPlay(), LLM()))
    by_source = {p["source"]: p for p in store.programs()}
    assert {p["author"] for p in store.programs() if p["mutation"] == "seed"} == {"example"}
    assert {p["author"] for p in store.programs() if p["mutation"] == "rewrite"} == {"model"}
    assert result.author == by_source[result.source]["author"]

    class Grammar(LLM):
        grammar = True

    store = RunStore.create(tmp_path / "grammar", {"test": True})
    ctx = context(game, store, 1, p0, CountingPlay(), Grammar())
    Evolve().best_response(ctx)
    rewrites = [p for p in store.programs() if p["mutation"] == "rewrite"]
    assert rewrites and {p["author"] for p in rewrites} == {"grammar"}

    store = RunStore.create(tmp_path / "seeds-only", {"test": True})
    ctx = context(game, store, 1, p0, CountingPlay(), LLM())
    ctx = dataclasses.replace(ctx, config=ctx.config.model_copy(update={"evolve": ctx.config.evolve.model_copy(
        update={"generations": 0})}))
    only = Evolve().best_response(ctx)
    assert only.source == game.example_policy and only.author == "example" and only.call_keys == []
