"""``grammar_search``: evolve's search with every rewrite drawn from the game's grammar, no
LLM call (issue 40), over the real sandbox and a real run store; play is counted, not simulated
(the helpers of ``test_evolve_oracle``)."""

import dataclasses

import pytest

from csro.config import EvolveConfig, OracleConfig
from csro.errors import ConfigError
from csro.evaluation import resolve
from csro.games import load_game
from csro.games.rrps import RRPS_HEADER
from csro.llm.estimate import SCENARIOS
from csro.oracles import CallSize, Opponent, get_oracle
from csro.oracles.evolve import Evolve, GrammarSearch
from csro.store import RunStore
from tests.evolve.test_evolve_oracle import LLM, CountingPlay, context


@pytest.fixture(scope="module")
def game():
    return load_game("rrps(num_throws=50)")


class NoLLM(LLM):
    """The run's LLM: any call fails the test."""

    grammar = True

    def complete_many(self, requests):
        raise AssertionError(f"grammar_search called the LLM: {[str(r.key) for r in requests]}")


def search(game, path, evolve=None, oracle=None, llm=None):
    """One grammar_search best response (iteration 1, sigma pure on uniform random) and the
    programs it stored."""
    store = RunStore.create(path, {"test": True})
    ctx = context(game, store, 1, [Opponent("p0", 1.0, resolve("builtin:random", game))], CountingPlay(), llm or NoLLM())
    if evolve:
        ctx = dataclasses.replace(ctx, config=ctx.config.model_copy(
            update={"evolve": ctx.config.evolve.model_copy(update=evolve)}))
    result = (oracle or GrammarSearch()).best_response(ctx)
    return result, store.programs()


def test_it_is_a_registry_row_that_never_calls_the_llm_issue_40(game, tmp_path):
    assert isinstance(get_oracle("grammar_search"), GrammarSearch)
    result, programs = search(game, tmp_path / "run")
    rewrites = [p for p in programs if p["mutation"] == "rewrite"]
    assert rewrites and all(p["source"].startswith(RRPS_HEADER) for p in rewrites)  # the model's frame
    assert {p["author"] for p in rewrites} == {"frame"}
    assert {p["author"] for p in programs if p["mutation"] == "seed"} == {"example"}
    assert result.source is not None and result.author in ("frame", "example") and result.call_keys == []
    assert result.reason.startswith("grammar_search: ")


def test_it_draws_as_many_candidates_as_a_model_run_of_the_same_config_issue_40(game, tmp_path):
    """islands x population_size x generations (2 x 2 x 2 here) or max_llm_calls, whatever the
    configured diff ratio and repairs: every draw is a full grammar rewrite."""
    llm = LLM()
    search(game, tmp_path / "model", oracle=Evolve(), llm=llm)
    _, programs = search(game, tmp_path / "frame", evolve={"diff_ratio": 0.9, "repairs": 2})
    drawn = [p for p in programs if p["call_key"]]
    assert len(drawn) == len(llm.keys) == 8
    assert sorted(p["call_key"] for p in drawn) == sorted(llm.keys)  # the keys the model's calls had
    assert {p["mutation"] for p in drawn} == {"rewrite"}
    # each generation is evaluated before the next is drawn (instant draws in a planning thread
    # beside an evaluating one crashed CPython 3.11's parser)
    assert GrammarSearch()._search(EvolveConfig(overlap=True, diff_ratio=0.5, repairs=1)).model_dump() == \
        EvolveConfig(overlap=False, diff_ratio=0.0, repairs=0).model_dump()
    _, capped = search(game, tmp_path / "capped", evolve={"max_llm_calls": 3})
    assert len([p for p in capped if p["call_key"]]) == 3


def test_the_same_seed_draws_the_same_programs_issue_40(game, tmp_path):
    first = search(game, tmp_path / "a")
    second = search(game, tmp_path / "b")
    assert first[0].source == second[0].source
    assert [(p["id"], p["source"]) for p in first[1]] == [(p["id"], p["source"]) for p in second[1]]
    assert len({p["source"] for p in first[1] if p["mutation"] == "rewrite"}) > 1  # draws differ by key


def test_a_game_without_a_strict_grammar_is_refused_by_name_issue_40(game, tmp_path):
    store = RunStore.create(tmp_path / "run", {"test": True})
    ctx = context(game, store, 1, [Opponent("p0", 1.0, resolve("builtin:random", game))], CountingPlay(), NoLLM())
    with pytest.raises(ConfigError, match=r"grammar_search needs a game with a strict policy grammar.*'leduc'"):
        GrammarSearch().best_response(dataclasses.replace(ctx, game=load_game("leduc")))


def test_it_costs_no_llm_call_issue_40():
    size = CallSize(first=900, completion=200, program=300, rules=100, written=2, new=1)
    config = OracleConfig(kind="grammar_search")
    assert Evolve().cost(config, size, SCENARIOS[-1])["calls"] > 0  # the same search with the model
    assert GrammarSearch().cost(config, size, SCENARIOS[-1])["calls"] == 0
