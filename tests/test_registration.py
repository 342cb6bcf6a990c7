"""A game, an oracle kind and a provider added in this module alone, each with one registry row,
and run through ``csro run`` (issue 27: "registration as data").

Nothing outside this file is edited: the toy game is an OpenSpiel matrix game under its own
name and rules text, the toy oracle asks the toy provider for one program and evaluates it,
and the toy provider answers every call with the same program. Their capabilities (the
oracle's ``per_player``, the provider's ``free``, ``counts_tokens``, ``grammar`` and images)
are fields of their classes. The run happens in this process (the ``csro`` app), so the rows
registered here are the ones its match pool (forked) and its configuration check see.
"""

from __future__ import annotations

import json

import pyspiel
import pytest
import yaml
from typer.testing import CliRunner

from csro.cli import app
from csro.config import LLMConfig, OracleConfig
from csro.games import GAMES
from csro.games.generic import GenericGame
from csro.llm import LLMReply, LLMRequest, Message
from csro.llm.estimate import Scenario, Tally
from csro.oracles import CallSize, Oracle, OracleContext, OracleResult
from csro.registry import ORACLES, PROVIDERS
from csro.store import RunStore

PROGRAM = ("class Agent:\n"
           "    def act(self, observation):\n"
           "        return observation['legal_actions'][0]\n")


class ToyGame(GenericGame):
    """Rock-paper-scissors as one OpenSpiel matrix game, under the name ``toy_rps``."""

    def __init__(self, name: str):
        super().__init__(name, pyspiel.load_game("matrix_rps"))
        self.rules_text = "Toy rock-paper-scissors: one simultaneous move; rock beats scissors beats paper beats rock."


class ToyOracle(Oracle):
    """One call to the LLM for a program, evaluated against sigma; declares one call."""

    name = "toy"
    per_player = True

    def best_response(self, ctx: OracleContext) -> OracleResult:
        request = ctx.llm.request("propose", [Message("user", "write a policy")])
        reply = ctx.llm.complete(request)
        if ctx.check([reply.text]) != [None]:
            return OracleResult(None, None, [str(request.key)], "invalid", [])
        return OracleResult(reply.text, ctx.evaluate(reply.text), [str(request.key)], "toy", [])

    def cost(self, config: OracleConfig, size: CallSize, scenario: Scenario) -> Tally:
        tally = Tally()
        tally.add(1, size.first, size.completion)
        return tally


class ToyProvider:
    """Every call answered with ``PROGRAM``."""

    name = "toy"
    model = "toy-1"
    max_concurrency = None
    grammar = False
    free = True
    counts_tokens = False

    @classmethod
    def from_config(cls, llm: LLMConfig, _: object = None) -> "ToyProvider":
        return cls()

    @classmethod
    def takes_images(cls, llm: LLMConfig) -> bool:
        return False

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        return LLMReply(request.key, PROGRAM, self.name, self.model, tokens_in=10, tokens_out=len(PROGRAM) // 4)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def registered():
    GAMES.register("toy_rps", ToyGame)
    ORACLES.register("toy", ToyOracle)
    PROVIDERS.register("toy", ToyProvider)


def test_a_toy_game_oracle_and_provider_run_through_csro_run(tmp_path, registered):
    config = {"game": "toy_rps", "iterations": 2, "seed": 3, "matches_per_cell": 2, "initial_policy": "builtin:random",
              "oracle": {"kind": "toy"}, "llm": {"provider": "toy"},
              "evaluation": {"population": ["builtin:random"], "matches_per_opponent": 2, "exact_nash_conv": False},
              "execution": {"processes": 1}}
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(config))
    done = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    with RunStore.open(tmp_path / "run") as store:
        policies = store.policies()
        calls = store.llm_calls()
        assert [p.oracle for p in policies] == ["initial", "toy"]  # iteration 2 drew the same program: a duplicate
        assert policies[1].source == PROGRAM
        assert {(r.provider, r.model, r.cost_usd) for _, r in calls} == {("toy", "toy-1", 0.0)}  # free, by its field
        assert [d["iteration"] for d in store.iterations()] == [0, 1, 2]
    status = CliRunner().invoke(app, ["status", str(tmp_path / "run"), "--json"])
    assert json.loads(status.output)["kind"] == "csro"


def test_an_unregistered_name_is_refused_naming_the_registered_ones(tmp_path, registered):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"game": "toy_rps", "oracle": {"kind": "toys"}}))
    done = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "run")])
    assert done.exit_code != 0
    assert "unknown oracle 'toys'" in str(done.output) + str(done.exception) and "toy" in str(done.exception or done.output)
