"""Generic OpenSpiel games through the Agent API, and load_game / list_games."""

from __future__ import annotations

import json
import pathlib

import pytest

from csro.errors import GameError
from csro.games import IllegalAction, get_builtin, list_games, load_game
from csro.games.generic import GenericGame, action_strings

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "policies"
GOOFSPIEL = "goofspiel(num_cards=4,imp_info=True,points_order=descending)"
GAMES = ["kuhn_poker", "leduc_poker", GOOFSPIEL, "liars_dice", "kuhn_poker(players=3)", "tic_tac_toe"]


@pytest.mark.parametrize("name", GAMES)
def test_random_play(name, play):
    game = load_game(name)
    assert game.policy_class == "Agent"
    assert game.population() == ["builtin:random"]
    lo, hi = game.return_range
    assert (lo, hi) == (game.openspiel_game.min_utility(), game.openspiel_game.max_utility())
    assert game.openspiel_game.get_type().long_name in game.rules_text
    assert "def act(self, observation: dict) -> str" in game.api_spec
    for seed in range(5):
        returns = play(game, ["random"] * game.num_players, seed)
        assert len(returns) == game.num_players
        assert all(lo <= r <= hi for r in returns)
        assert returns == play(game, ["random"] * game.num_players, seed)
        assert abs(sum(returns)) < 1e-9  # all of these are zero-sum


@pytest.mark.parametrize("name", GAMES)
def test_example_policy_plays(name, play, from_source):
    game = load_game(name)
    agents = [from_source(game.example_policy, "Agent") for _ in range(game.num_players)]
    assert len(play(game, agents, 0)) == game.num_players


def test_kuhn_observation():
    game = load_game("kuhn_poker")
    match = game.new_match(3)
    (req,) = match.pending()
    assert req.seat == 0 and req.legal == ("Pass", "Bet")
    obs = req.args[0]
    card = match.state.information_state_string(0)
    assert obs == {
        "player": 0,
        "info_state": card,
        "observation": match.state.observation_string(0),
        "legal_actions": ["Pass", "Bet"],
        "move_number": match.state.move_number(),
        "num_players": 2,
        "info_state_tensor": list(match.state.information_state_tensor(0)),
    }
    assert json.loads(json.dumps(obs)) == obs
    match.answer(["Bet"])
    (req,) = match.pending()
    assert req.seat == 1 and req.args[0]["info_state"].endswith("b")
    before = (match.state.history(), match.pending())
    with pytest.raises(IllegalAction) as info:
        match.answer(["bet"])
    assert info.value.seat == 1 and info.value.legal == ("Pass", "Bet")
    assert (match.state.history(), match.pending()) == before
    match.answer(["Pass"])  # fold
    assert match.over and match.returns() == [1.0, -1.0]


def test_simultaneous_goofspiel():
    game = load_game(GOOFSPIEL)
    match = game.new_match(0)
    requests = match.pending()
    assert [r.seat for r in requests] == [0, 1]
    assert requests[0].legal == tuple(f"[P0]Bid: {i}" for i in range(1, 5))
    assert requests[1].legal == tuple(f"[P1]Bid: {i}" for i in range(1, 5))
    with pytest.raises(IllegalAction) as info:
        match.answer(["[P0]Bid: 1", "[P0]Bid: 1"])
    assert info.value.seat == 1
    match.answer(["[P0]Bid: 4", "[P1]Bid: 1"])
    requests = match.pending()
    assert "[P0]Bid: 4" not in requests[0].legal and len(requests[0].legal) == 3


def test_three_players_and_forfeit():
    game = load_game("kuhn_poker(players=3)")
    assert game.num_players == 3 and game.return_range == (-2.0, 4.0)
    match = game.new_match(0)
    assert [r.seat for r in match.pending()] == [0]
    match.answer(["Pass"])
    assert [r.seat for r in match.pending()] == [1]
    match.forfeit(1)
    assert match.over and match.pending() == []
    assert match.returns() == [1.0, -2.0, 1.0]


def test_liars_dice_has_no_observation_string():
    game = load_game("liars_dice")
    obs = game.new_match(0).pending()[0].args[0]
    assert obs["observation"] is None and obs["info_state"]
    assert "Liar" not in obs["legal_actions"]  # not as the first move


def test_chance_is_seeded():
    game = load_game("leduc_poker")
    deals = {tuple(game.new_match(s).state.history()) for s in range(20)}
    assert len(deals) > 5
    assert game.new_match(3).state.history() == game.new_match(3).state.history()


def test_duplicate_action_strings_are_disambiguated():
    class FakeState:
        def action_to_string(self, player, action):
            return {0: "a", 1: "b", 2: "a", 3: ""}[action]

    assert action_strings(FakeState(), 0, [0, 1, 2, 3]) == ["a #0", "b", "a #2", "#3"]
    assert action_strings(FakeState(), 0, [0, 1]) == ["a", "b"]


def test_load_game_errors_and_cache():
    assert load_game("kuhn_poker") is load_game("kuhn_poker")
    with pytest.raises(GameError, match="no_such_game.*csro games"):
        load_game("no_such_game")
    with pytest.raises(GameError, match="bogus"):
        load_game("kuhn_poker(bogus=1)")
    with pytest.raises(GameError, match="mean-field"):
        load_game("mfg_crowd_modelling")
    with pytest.raises(GameError, match="at least 2"):
        load_game("catch")
    with pytest.raises(GameError, match="'nope'.*always_call, always_fold, cfr_plus, random"):
        get_builtin(load_game("leduc"), "nope")
    assert get_builtin(load_game("rrps"), "greenberg").name == "greenberg"


def test_own_games_load_back_by_the_names_they_report():
    # Workers reload a game by its name, so a shortened game must be loadable by it.
    short = load_game("rrps(num_throws=50)")
    assert short.name == "rrps(num_throws=50)" and short.num_throws == 50
    assert load_game("leduc(num_hands=3)").name == "leduc(num_hands=3)"
    with pytest.raises(GameError, match="rrps takes only num_throws"):
        load_game("rrps(num_hands=3)")
    with pytest.raises(GameError, match="num_hands must be at least 1"):
        load_game("leduc(num_hands=0)")


def test_list_games():
    games = list_games()
    names = [n for n, _ in games]
    assert names[:2] == ["rrps", "leduc"]
    for name in ["kuhn_poker", "leduc_poker", GOOFSPIEL, "liars_dice", "kuhn_poker(players=3)"]:
        assert name in names
    for name, description in games:
        assert description
        if name not in ("rrps", "leduc", "ipd"):  # ipd: games.ipd, not generic
            assert isinstance(load_game(name), GenericGame)


def test_kuhn_example_file(play, from_source):
    game = load_game("kuhn_poker")
    source = (EXAMPLES / "kuhn_simple.py").read_text()
    total = 0.0
    for seed in range(200):
        agent = from_source(source, "Agent")
        seats = [agent, "random"] if seed % 2 == 0 else ["random", agent]
        total += play(game, seats, seed)[seed % 2]
    assert total > 0  # beats uniform random on average
