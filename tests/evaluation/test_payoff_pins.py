"""The same seeds give the same match returns, pinned as literal numbers.

The expected values were computed once and written down here: any change to the runner,
the sandbox channel or the worker that changes a single match return makes this fail.
Recomputed once, deliberately, for issue 28 (a match's result a function of its seed alone:
each code-policy instance runs with random streams of its own, seeded from its seat's seed,
instead of sharing its worker's ``random``, whose seed came from the chunk's first match). Real sandboxed workers and real OpenSpiel games; code policies that draw from an
unseeded ``random`` (so the worker's seed matters), built-ins that draw from their own
streams (RoShamBo bots, CFR+), code-vs-code and self-play cells.
"""

from __future__ import annotations

import pathlib

import pytest

from csro.evaluation import evaluate, resolve
from csro.evaluation.policy_ref import code_policy
from csro.games import load_game
from csro.policies import SandboxLimits

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "policies"
LIMITS = SandboxLimits(call_seconds=20.0, match_seconds=120.0)

RRPS_DICE = """
import random

class Agent:
    def act(self, observation):
        if observation["opponent_action"] == "ROCK" and random.random() < 0.5:
            return "PAPER"
        return random.choice(["ROCK", "PAPER", "SCISSORS"])
"""

LEDUC_DICE = """
import random

class RepeatedLeducPokerBot:
    def restart(self, player_id):
        self.player_id = player_id

    def act(self, observation):
        return random.choice(observation["player_view"]["legal_actions"])

    def receive_outcome(self, observation):
        pass
"""

RRPS_SETUP = {
    "game": "rrps", "matches": 3, "seed": 11,
    "policies": [("file", "rrps_frequency.py"), ("code", "dice", RRPS_DICE)],
    "opponents": [("builtin", "rotatebot"), ("builtin", "randbot"), ("builtin", "iocainebot"),
                  ("builtin", "greenberg"), ("builtin", "random"), ("code", "dice", RRPS_DICE)],
}
LEDUC_SETUP = {
    "game": "leduc", "matches": 4, "seed": 5,
    "policies": [("file", "leduc_simple.py"), ("code", "dice", LEDUC_DICE)],
    "opponents": [("builtin", "cfr_plus"), ("builtin", "always_call"), ("builtin", "random"),
                  ("code", "dice", LEDUC_DICE)],
}


def _spec(game, entry):
    kind, *rest = entry
    if kind == "file":
        return resolve(str(EXAMPLES / rest[0]), game)
    if kind == "builtin":
        return resolve(f"builtin:{rest[0]}", game)
    return code_policy(rest[0], rest[1], game)


def run_setup(setup: dict, processes: int | None = None) -> list[list]:
    """Every match as [policies, seed, returns, forfeit], sorted (independent of layout)."""
    game = load_game(setup["game"])
    result = evaluate(game, [_spec(game, p) for p in setup["policies"]],
                      [_spec(game, o) for o in setup["opponents"]], matches=setup["matches"],
                      seed=setup["seed"], limits=LIMITS, processes=processes)
    return sorted([list(r.policies), r.seed, list(r.returns), r.forfeit] for r in result.results)

RRPS_EXPECTED = [  # [policies, seed, returns, forfeit] of every match
    [['builtin:greenberg', 'dice'], 233817025933018183, [20.0, -20.0], None],
    [['builtin:greenberg', 'rrps_frequency'], 6189319762374038357, [994.0, -994.0], None],
    [['builtin:iocainebot', 'dice'], 1596520825276422093, [-12.0, 12.0], None],
    [['builtin:iocainebot', 'rrps_frequency'], 4752627971859587270, [909.0, -909.0], None],
    [['builtin:randbot', 'dice'], 7021216350938259285, [7.0, -7.0], None],
    [['builtin:randbot', 'rrps_frequency'], 4106733764834295758, [-24.0, 24.0], None],
    [['builtin:random', 'dice'], 6475300059546920089, [10.0, -10.0], None],
    [['builtin:random', 'rrps_frequency'], 4064405327990143983, [41.0, -41.0], None],
    [['builtin:rotatebot', 'dice'], 8004957738074729507, [-21.0, 21.0], None],
    [['builtin:rotatebot', 'rrps_frequency'], 238949991601781981, [-1.0, 1.0], None],
    [['dice', 'builtin:greenberg'], 1790488720414457729, [-10.0, 10.0], None],
    [['dice', 'builtin:greenberg'], 4697827105994476220, [-65.0, 65.0], None],
    [['dice', 'builtin:iocainebot'], 1488954280448238965, [-25.0, 25.0], None],
    [['dice', 'builtin:iocainebot'], 4209852616840087176, [16.0, -16.0], None],
    [['dice', 'builtin:randbot'], 3841093110287157213, [10.0, -10.0], None],
    [['dice', 'builtin:randbot'], 8471983121433639876, [15.0, -15.0], None],
    [['dice', 'builtin:random'], 1914878542917788517, [0.0, 0.0], None],
    [['dice', 'builtin:random'], 8883355126387728005, [-46.0, 46.0], None],
    [['dice', 'builtin:rotatebot'], 2698078642084267510, [-30.0, 30.0], None],
    [['dice', 'builtin:rotatebot'], 6890636525668941589, [8.0, -8.0], None],
    [['dice', 'dice'], 1967343845370275029, [0.0, 0.0], None],
    [['dice', 'dice'], 2799251469011386719, [39.0, -39.0], None],
    [['dice', 'dice'], 8334511702331938360, [3.0, -3.0], None],
    [['dice', 'rrps_frequency'], 7021801669202444327, [14.0, -14.0], None],
    [['rrps_frequency', 'builtin:greenberg'], 1276605033822698225, [-990.0, 990.0], None],
    [['rrps_frequency', 'builtin:greenberg'], 7603255576499445690, [-988.0, 988.0], None],
    [['rrps_frequency', 'builtin:iocainebot'], 155892693628800302, [-958.0, 958.0], None],
    [['rrps_frequency', 'builtin:iocainebot'], 4022199339105517878, [-964.0, 964.0], None],
    [['rrps_frequency', 'builtin:randbot'], 4705256452528204220, [-13.0, 13.0], None],
    [['rrps_frequency', 'builtin:randbot'], 6538256669382522475, [19.0, -19.0], None],
    [['rrps_frequency', 'builtin:random'], 579102326222468792, [9.0, -9.0], None],
    [['rrps_frequency', 'builtin:random'], 4169463761356773195, [31.0, -31.0], None],
    [['rrps_frequency', 'builtin:rotatebot'], 366918855531722387, [1.0, -1.0], None],
    [['rrps_frequency', 'builtin:rotatebot'], 6037357121975867694, [1.0, -1.0], None],
    [['rrps_frequency', 'dice'], 4242310090653876084, [-11.0, 11.0], None],
    [['rrps_frequency', 'dice'], 7783181463578392816, [10.0, -10.0], None],
]

LEDUC_EXPECTED = [  # [policies, seed, returns, forfeit] of every match
    [['builtin:always_call', 'dice'], 2579280358623854650, [52.0, -52.0], None],
    [['builtin:always_call', 'dice'], 7392780416959978864, [33.0, -33.0], None],
    [['builtin:always_call', 'leduc_simple'], 2969840122271683417, [-140.0, 140.0], None],
    [['builtin:always_call', 'leduc_simple'], 4028283125230161662, [-113.0, 113.0], None],
    [['builtin:cfr_plus', 'dice'], 1693647011269306883, [71.0, -71.0], None],
    [['builtin:cfr_plus', 'dice'], 3610411024095570753, [130.0, -130.0], None],
    [['builtin:cfr_plus', 'leduc_simple'], 2126040663792771567, [3.0, -3.0], None],
    [['builtin:cfr_plus', 'leduc_simple'], 3126790075269546294, [11.0, -11.0], None],
    [['builtin:random', 'dice'], 829319293250925262, [-37.0, 37.0], None],
    [['builtin:random', 'dice'], 9125484662018685263, [20.0, -20.0], None],
    [['builtin:random', 'leduc_simple'], 2839031586971989292, [-21.0, 21.0], None],
    [['builtin:random', 'leduc_simple'], 3496651558629640037, [-57.0, 57.0], None],
    [['dice', 'builtin:always_call'], 6321630367533447170, [-50.0, 50.0], None],
    [['dice', 'builtin:always_call'], 7641497585871657516, [39.0, -39.0], None],
    [['dice', 'builtin:cfr_plus'], 2421940173387953233, [-69.0, 69.0], None],
    [['dice', 'builtin:cfr_plus'], 6477542525438363690, [-111.0, 111.0], None],
    [['dice', 'builtin:random'], 2831662699935781390, [29.0, -29.0], None],
    [['dice', 'builtin:random'], 8118301531404332462, [-79.0, 79.0], None],
    [['dice', 'dice'], 3667817260370481843, [-78.0, 78.0], None],
    [['dice', 'dice'], 6219482588924037442, [29.0, -29.0], None],
    [['dice', 'dice'], 8780487388214827645, [-56.0, 56.0], None],
    [['dice', 'dice'], 9165798209853273834, [-15.0, 15.0], None],
    [['dice', 'leduc_simple'], 188339142169358012, [-152.0, 152.0], None],
    [['dice', 'leduc_simple'], 4761246911038882399, [-145.0, 145.0], None],
    [['leduc_simple', 'builtin:always_call'], 2911864739928822515, [115.0, -115.0], None],
    [['leduc_simple', 'builtin:always_call'], 9199333811272105389, [154.0, -154.0], None],
    [['leduc_simple', 'builtin:cfr_plus'], 2094439392222406457, [-33.0, 33.0], None],
    [['leduc_simple', 'builtin:cfr_plus'], 8535412166760954465, [-42.0, 42.0], None],
    [['leduc_simple', 'builtin:random'], 365741410888032213, [111.0, -111.0], None],
    [['leduc_simple', 'builtin:random'], 2155405842189509065, [125.0, -125.0], None],
    [['leduc_simple', 'dice'], 2666949637854476334, [90.0, -90.0], None],
    [['leduc_simple', 'dice'], 2930147767103956425, [262.0, -262.0], None],
]


@pytest.mark.parametrize("setup, expected", [
    pytest.param(RRPS_SETUP, RRPS_EXPECTED, id="rrps"),
    pytest.param(LEDUC_SETUP, LEDUC_EXPECTED, id="leduc"),  # CFR+'s table ships with csro: no solve
])
@pytest.mark.parametrize("processes", [1, 2])
def test_same_seeds_same_payoffs(setup, expected, processes):
    assert run_setup(setup, processes) == expected
