"""Sheriff, the asymmetric general-sum game: roles, rules as stated, personas, exact NashConv."""

import numpy as np
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import exploitability as os_exploitability

from csro.evaluation import code_policy, evaluate, exact_exploitability, play_chunk, resolve
from csro.evaluation.runner import Chunk, MatchJob, SeatRef
from csro.games import list_games, load_game
from csro.games.sheriff import EXAMPLE_POLICY
from tests.conftest import check_program
from csro.policies import SandboxLimits

FIRST = "class Agent:\n    def act(self, observation):\n        return observation['legal_actions'][0]\n"


@pytest.fixture(scope="module")
def sheriff():
    return load_game("sheriff")


def _final(game, items, bribes, answers):
    state = game.openspiel_game.new_initial_state()
    state.apply_action(state.legal_actions()[items])
    for b, a in zip(bribes, answers):
        state.apply_action(state.legal_actions()[b])
        state.apply_action(state.legal_actions()[a])
    return state.returns()


def test_seats_differ(sheriff):
    assert sheriff.seat_roles == ("smuggler", "sheriff")
    assert not sheriff.zero_sum and sheriff.num_players == 2
    assert "smuggler" in sheriff.seat_rules_text(0) and "You play seat 1, the sheriff" in sheriff.seat_rules_text(1)
    assert sheriff.seat_rules_text(0) != sheriff.seat_rules_text(1)
    assert sheriff.seat_population(0) == sheriff.seat_population(1) == sheriff.population()
    assert load_game("kuhn_poker").seat_roles is None  # the default: one role for every seat
    assert "sheriff" in [name for name, _ in list_games()]


def test_rules_text_payoffs_match_the_engine(sheriff):
    # defaults: item_value 1, item_penalty 2, sheriff_penalty 3, 4 rounds; only the last round counts
    assert _final(sheriff, 2, [0, 0, 0, 0], [0, 0, 0, 0]) == [2.0, 0.0]  # 2 items through, no bribe
    assert _final(sheriff, 2, [1, 2, 3, 2], [1, 1, 1, 0]) == [0.0, 2.0]  # 2 items - last bribe 2
    assert _final(sheriff, 2, [1, 2, 3, 2], [0, 0, 0, 1]) == [-4.0, 4.0]  # caught: 2 x penalty 2
    assert _final(sheriff, 0, [1, 2, 3, 2], [0, 0, 0, 1]) == [3.0, -3.0]  # honest cargo inspected
    for phrase in ("last bribe", "item_penalty per item", "sheriff_penalty", "No bribe is paid"):
        assert phrase in sheriff.rules_text


def _play(game, a, b, seed=0):
    seats = tuple(SeatRef.of(resolve(f"builtin:{n}", game)) for n in (a, b))
    (result,) = play_chunk(Chunk(game.name, (MatchJob(seats, seed),), SandboxLimits()))
    return result.returns


def test_personas(sheriff):
    assert _play(sheriff, "greedy", "honest") == (3.0, 0.0)  # 3 items, never inspected
    assert _play(sheriff, "greedy", "greedy") == (-6.0, 6.0)  # caught with 3 items
    assert _play(sheriff, "honest", "greedy") == (3.0, -3.0)  # inspects an honest cargo
    assert _play(sheriff, "briber", "briber") == (0.0, 3.0)  # bribed: 3 items - bribe 3


def test_code_policies_play_both_seats(sheriff):
    assert check_program(sheriff, EXAMPLE_POLICY) is None
    pop = [resolve(r, sheriff) for r in sheriff.population()]
    ev = evaluate(sheriff, [code_policy("example", EXAMPLE_POLICY, sheriff)], pop, matches=2, seed=0, processes=1)
    seats = {res.policies.index("example") for res in ev.results}
    assert seats == {0, 1}
    # vs greedy: as smuggler (1 item, bribe 1) it is inspected (-2); as sheriff it catches 3 items (+6)
    assert ev.table.mean("example", "builtin:greedy") == pytest.approx((-2.0 + 6.0) / 2)


def test_exact_nash_conv_of_a_code_policy(sheriff):
    result = exact_exploitability(sheriff, [code_policy("first", FIRST, sheriff)], samples=1)
    g = sheriff.openspiel_game
    tab = os_policy.TabularPolicy(g)
    for row in tab.state_lookup.values():
        legal = np.nonzero(tab.legal_actions_mask[row])[0]
        tab.action_probability_array[row] = 0
        tab.action_probability_array[row, legal[0]] = 1
    assert result.infostates == 4681
    assert result.nash_conv == pytest.approx(os_exploitability.nash_conv(g, tab), abs=1e-9)
