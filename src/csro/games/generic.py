"""Any OpenSpiel game as code policies see it.

The CSRO paper (Hennes, Li, Schultz, Lanctot, arXiv 2603.10098) defines policy APIs for
its two games only; this module is our generalisation to any OpenSpiel game string:
sequential or simultaneous moves, 2..n players, explicit chance. A policy is
``class Agent`` with ``act(observation) -> str``; the observation is plain data built
from what OpenSpiel offers for the acting player::

    {'player': int,                 # the OpenSpiel player (= match seat)
     'info_state': str,             # information_state_string, else observation_string
     'observation': str | None,     # observation_string, if the game provides one
     'legal_actions': [str, ...],   # state.action_to_string(player, a) per legal action
     'move_number': int,            # state.move_number()
     'num_players': int,
     'info_state_tensor': [float]}  # only for games whose tensor has <= 128 entries

Our interpretations:
  * Chance nodes are sampled by the match from OpenSpiel's ``chance_outcomes()`` with a
    numpy Generator seeded by the match seed; policies never see chance nodes.
  * Simultaneous nodes give one ``act`` request per player with legal actions, in one
    round (a player with none is passed ``pyspiel.INVALID_ACTION``).
  * Seat s is OpenSpiel player s (no permutation): averaging over seats is the
    evaluator's job.
  * If two legal actions of a player share a string (or a string is empty), every
    action in that group is written ``"<string> #<action id>"``, deterministic and
    unique; all other strings are OpenSpiel's unchanged.
  * return_range is ``(game.min_utility(), game.max_utility())``.
  * Mean-field games, one-player games and games with unbounded returns are refused
    (CSRO needs >= 2 players; a forfeit scores the minimum return).
"""

from __future__ import annotations

import functools
import json
import math
import pprint
from typing import Any, Sequence

import pyspiel

from csro.errors import GameError, IllegalAction
from csro.games._base import (
    BuiltinPolicy,
    CodeGame,
    Match,
    Request,
    forfeit_returns,
)
from csro.games._common import UniformRandom, rng, sample_chance

MAX_TENSOR = 128  # include info_state_tensor only when it is at most this long


def action_strings(state: pyspiel.State, player: int, actions: Sequence[int]) -> list[str]:
    """OpenSpiel's strings for ``actions``, made unique (see the module docstring)."""
    strings = [state.action_to_string(player, a) for a in actions]
    if len(set(strings)) == len(strings) and "" not in strings:
        return strings
    counts: dict[str, int] = {}
    for s in strings:
        counts[s] = counts.get(s, 0) + 1
    return [
        f"{s} #{a}".lstrip() if counts[s] > 1 or s == "" else s
        for s, a in zip(strings, actions)
    ]


class GenericMatch(Match):
    """One episode of an OpenSpiel game; seat s plays player s."""

    def __init__(self, game: "GenericGame", seed: int):
        self._code_game = game
        self.seed = seed
        self.state = game.openspiel_game.new_initial_state()
        self._rng = rng(seed)
        self._forfeit: list[float] | None = None
        self._pending: list[Request] | None = None
        self._maps: list[tuple[int, dict[str, int]]] = []
        self._advance_chance()

    def _advance_chance(self) -> None:
        state = self.state
        while state.is_chance_node():
            state.apply_action(sample_chance(state, self._rng.random()))

    def observation(self, player: int, legal: list[str]) -> dict:
        return self._code_game.observation(self.state, player, legal)

    def pending(self) -> list[Request]:
        if self.over:
            return []
        if self._pending is None:
            self._pending = self._requests()
        return list(self._pending)

    def _requests(self) -> list[Request]:
        state = self.state
        if state.is_simultaneous_node():
            players = range(self._code_game.num_players)
        else:
            players = (state.current_player(),)
        requests, maps = [], []
        for p in players:
            actions = state.legal_actions(p)
            if not actions:
                continue
            strings = action_strings(state, p, actions)
            obs = self.observation(p, strings)
            requests.append(Request(p, "act", (obs,), tuple(strings)))
            maps.append((p, dict(zip(strings, actions))))
        self._maps = maps
        return requests

    def answer(self, replies: Sequence[Any]) -> None:
        if self.over:
            raise RuntimeError("answer() on a finished match")
        if self._pending is None:
            self._pending = self._requests()
        if len(replies) != len(self._pending):
            raise ValueError(f"{len(replies)} replies for {len(self._pending)} requests")
        chosen = []
        for (player, mapping), reply, req in zip(self._maps, replies, self._pending):
            try:
                chosen.append(mapping[reply])
            except (KeyError, TypeError):
                raise IllegalAction(req.seat, reply, req.legal) from None
        state = self.state
        if state.is_simultaneous_node():
            joint = [pyspiel.INVALID_ACTION] * self._code_game.num_players
            for (player, _), action in zip(self._maps, chosen):
                joint[player] = action
            state.apply_actions(joint)
        else:
            state.apply_action(chosen[0])
        self._pending = None
        self._advance_chance()

    def returns(self) -> list[float]:
        if self._forfeit is not None:
            return list(self._forfeit)
        return self.state.returns()

    def forfeit(self, seat: int) -> None:
        n = self._code_game.num_players
        self._forfeit = forfeit_returns(n, seat, self._code_game.return_range[0])
        self._pending = None

    @property
    def over(self) -> bool:
        return self._forfeit is not None or self.state.is_terminal()


# Short, accurate rule summaries of common OpenSpiel games (by short name), for prompts.
KNOWN_RULES = {
    "kuhn_poker": (
        "Kuhn poker (OpenSpiel's kuhn_poker). With N players the deck has N+1 cards ranked "
        "0 < 1 < ... < N (for 2 players: Jack=0, Queen=1, King=2). Each player antes 1 chip "
        "and gets one private card. Players act in order starting with player 0, each "
        "choosing Pass or Bet (a bet is 1 chip). Before anyone bets, Pass is a check; once "
        "someone has bet, Pass folds and Bet calls. The hand ends when everyone has acted "
        "after the last bet (or all passed). The highest card among players who did not "
        "fold wins the whole pot. Returns are chips won minus chips put in. The information "
        "state string is your card followed by the action history, 'p' for pass and 'b' "
        "for bet (e.g. '2pb': you hold card 2, player 0 passed, player 1 bet)."
    ),
    "leduc_poker": (
        "Leduc hold'em (OpenSpiel's leduc_poker), one hand. Deck: two Jacks, two Queens, two "
        "Kings (for 2 players; cards are numbered 0..5, card c has rank c // 2). Each player "
        "antes 1 chip and gets one private card. Round 1: player 0 acts first; Call matches "
        "the current bet (a check when there is none), Raise matches and raises by 2, Fold "
        "gives up and is only legal when facing a bet; at most 2 raises per round. Then one "
        "public card is dealt and round 2 is played the same way with raises of 4. At the "
        "showdown a private card pairing the public card wins, else the higher card; ties "
        "split. Returns are chips won minus chips put in (at most 13 either way)."
    ),
    "goofspiel": (
        "Goofspiel (OpenSpiel's goofspiel). Each player holds bid cards 1..num_cards; a deck "
        "of point cards 1..num_cards is revealed one at a time (in the order set by "
        "points_order). Every turn all players simultaneously bid one of their remaining "
        "cards for the revealed point card; the unique highest bid wins its points (ties: "
        "nobody wins them), and the bid cards are discarded. With imp_info=True players do "
        "not see each other's bids, only who won each turn. With the default win_loss "
        "returns, the player with the most points at the end gets +1 and the other -1 "
        "(0 for a tie)."
    ),
    "liars_dice": (
        "Liar's dice (OpenSpiel's liars_dice), one round. Each player rolls numdice dice "
        "(default 1, with dice_sides = 6 faces) hidden from the other. Player 0 starts; "
        "players alternately bid 'q-f': at least q dice among all players show face f. Each "
        "bid must be higher than the previous one (default reset-face rule: more dice of any "
        "face, or the same number of a higher face). The highest face (6) is wild: it counts "
        "as every face. Instead of bidding, a player may call 'Liar' (not as the first move): "
        "if the last bid is true the caller loses, otherwise the bidder loses. The loser gets "
        "-1, the winner +1. The information state string is your dice followed by the bids "
        "so far."
    ),
    "sheriff": (
        "Sheriff (OpenSpiel's sheriff), a bargaining game between a smuggler (player 0) and a "
        "sheriff (player 1). The smuggler first loads 0 to max_items illegal items into its "
        "cargo, hidden from the sheriff. Then for num_rounds rounds the smuggler offers a "
        "bribe of 0 to max_bribe (the sheriff sees it) and the sheriff answers whether it "
        "would inspect the cargo. Only the last round counts. If the sheriff's last answer is "
        "not to inspect, the smuggler gets item_value per item minus the last bribe and the "
        "sheriff gets the last bribe. If it inspects and finds items, the smuggler pays "
        "item_penalty per item to the sheriff; if it inspects a cargo with no items, the "
        "sheriff pays sheriff_penalty to the smuggler. No bribe is paid on inspection."
    ),
}


class GenericGame(CodeGame):
    """An OpenSpiel game string, played through the generic ``Agent`` API."""

    policy_class = "Agent"
    exact_exploitability = True  # one hand of the OpenSpiel game (``csro.evaluation.exploitability`` checks the rest)

    def __init__(self, game_string: str, os_game: pyspiel.Game | None = None):
        self.name = game_string
        self.openspiel_game = os_game if os_game is not None else pyspiel.load_game(game_string)
        game = self.openspiel_game
        gtype = game.get_type()
        if gtype.dynamics == pyspiel.GameType.Dynamics.MEAN_FIELD:
            raise GameError(f"game {game_string!r} is a mean-field game; csro plays n-player games")
        self.num_players = game.num_players()
        if self.num_players < 2:
            raise GameError(
                f"game {game_string!r} has {self.num_players} player; csro needs at least 2"
            )
        self._has_info = gtype.provides_information_state_string
        self._has_obs = gtype.provides_observation_string
        if not (self._has_info or self._has_obs):
            raise GameError(
                f"game {game_string!r} provides neither information-state nor observation "
                "strings, so a code policy could not see it"
            )
        self._tensor = (
            gtype.provides_information_state_tensor
            and game.information_state_tensor_size() <= MAX_TENSOR
        )
        self.return_range = (float(game.min_utility()), float(game.max_utility()))
        if not all(math.isfinite(x) for x in self.return_range):
            raise GameError(
                f"game {game_string!r} has unbounded returns {self.return_range}; csro needs "
                "finite bounds (forfeits score the minimum)"
            )
        self.description = (
            f"{gtype.long_name} (OpenSpiel), {self.num_players} players, "
            f"{'simultaneous' if gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS else 'turn-based'}"
        )
        self.rules_text = self._rules_text()
        self.api_spec = self._api_spec()
        self.example_policy = EXAMPLE_POLICIES.get(gtype.short_name, EXAMPLE_POLICY)

    def observation(self, state: pyspiel.State, player: int, legal: list[str]) -> dict:
        """The observation dict of ``player`` at ``state`` (``legal``: its action strings)."""
        obs_str = state.observation_string(player) if self._has_obs else None
        obs = {
            "player": player,
            "info_state": state.information_state_string(player) if self._has_info else obs_str,
            "observation": obs_str,
            "legal_actions": list(legal),
            "move_number": state.move_number(),
            "num_players": self.num_players,
        }
        if self._tensor:
            obs["info_state_tensor"] = [float(x) for x in state.information_state_tensor(player)]
        return obs

    def new_match(self, seed: int) -> GenericMatch:
        return GenericMatch(self, seed)

    @functools.cache
    def builtins(self) -> dict[str, BuiltinPolicy]:
        return {"random": UniformRandom()}

    def population(self) -> list[str]:
        return ["builtin:random"]

    # -- texts ------------------------------------------------------------------------
    def _example_observation(self) -> dict | None:
        """The first observation of a seeded match (for the API text), or None."""
        match = GenericMatch(self, 0)
        reqs = match.pending()
        return reqs[0].args[0] if reqs else None

    def _rules_text(self) -> str:
        game = self.openspiel_game
        gtype = game.get_type()
        params = game.get_parameters()
        lines = [f"{gtype.long_name} — OpenSpiel game string: {self.name}"]
        known = KNOWN_RULES.get(gtype.short_name)
        if known:
            lines += ["", known]
        simultaneous = gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
        info = {
            pyspiel.GameType.Information.PERFECT_INFORMATION: "perfect information",
            pyspiel.GameType.Information.IMPERFECT_INFORMATION: "imperfect information",
            pyspiel.GameType.Information.ONE_SHOT: "a one-shot game",
        }.get(gtype.information, str(gtype.information))
        utility = {
            pyspiel.GameType.Utility.ZERO_SUM: "zero-sum",
            pyspiel.GameType.Utility.CONSTANT_SUM: "constant-sum",
            pyspiel.GameType.Utility.GENERAL_SUM: "general-sum",
            pyspiel.GameType.Utility.IDENTICAL: "identical-interest",
        }.get(gtype.utility, str(gtype.utility))
        chance = gtype.chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC
        lines += [
            "",
            f"Players: {self.num_players}. Moves: "
            + ("simultaneous (every player chooses at once each turn)" if simultaneous
               else "turn-based (one player acts at a time)")
            + f". Information: {info}. Chance events: {'yes' if chance else 'no'}. "
            f"Payoffs: {utility}.",
            f"Parameters: {json.dumps(params, default=str, sort_keys=True)}",
            f"Each player's return for a game is between {game.min_utility():g} and "
            f"{game.max_utility():g}; the objective is to maximize your own return.",
            "The rules are exactly those of OpenSpiel's implementation of this game; the "
            "legal actions offered in each observation are the only moves allowed.",
        ]
        return "\n".join(lines) + "\n"

    def _api_spec(self) -> str:
        example = self._example_observation()
        tensor_line = (
            "\n             'info_state_tensor': [float, ...],  # OpenSpiel's information-state tensor"
            if self._tensor
            else ""
        )
        info_src = "information_state_string" if self._has_info else "observation_string"
        obs_src = "observation_string(player)" if self._has_obs else "None (not provided by this game)"
        return API_SPEC.format(
            game=self.name,
            info_src=info_src,
            obs_src=obs_src,
            tensor_line=tensor_line,
            example=_indent(pprint.pformat(example, width=76, compact=True, sort_dicts=False), 12),
        )


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line for line in text.splitlines())


API_SPEC = '''\
class Agent:
    """A policy for the OpenSpiel game {game}. One instance plays one seat of one game.

    The runner creates the object with no arguments and calls ``act`` every time this
    seat must move (in simultaneous-move games every seat is asked each turn, without
    seeing the others' choices of that turn). Keep whatever state you need on ``self``.
    Only the Python standard library (and numpy, if available) may be imported.
    """

    def __init__(self):
        ...

    def act(self, observation: dict) -> str:
        """Choose an action.

        Args:
          observation: plain data about the game from your point of view:
            {{'player': int,              # your player number (0-based)
             'info_state': str,          # OpenSpiel's {info_src}(player):
                                         # everything you know so far
             'observation': str | None,  # OpenSpiel's {obs_src}
             'legal_actions': [str, ...],  # the moves you may make now
             'move_number': int,         # moves made so far in the game
             'num_players': int,{tensor_line}
            }}
            For example, the first observation of a game:
{example}

        Returns:
          One of ``observation['legal_actions']``, exactly as written. Anything else, an
          exception, or a timeout forfeits the game.
        """
'''

EXAMPLE_POLICY = '''\
import random


class Agent:
    """Plays a uniformly random legal action (a baseline to improve on)."""

    def __init__(self):
        self.rng = random.Random(0)

    def act(self, observation: dict) -> str:
        return self.rng.choice(observation["legal_actions"])
'''

KUHN_EXAMPLE = '''\
class Agent:
    """Kuhn poker by card strength: bet/call with the top card, pass/fold with the lowest.

    The info_state string is my card followed by the history ('p' pass, 'b' bet). With
    N players the cards are 0..N and the top card is N.
    """

    def act(self, observation: dict) -> str:
        info = observation["info_state"]
        card, history = int(info[0]), info[1:]
        top = observation["num_players"]
        facing_bet = "b" in history
        if card == top:
            return "Bet"  # bet, or call a bet
        if card == 0:
            return "Pass"  # check, or fold to a bet
        # middle cards: check, and call a bet only in the two-player game
        if facing_bet and top == 2:
            return "Bet"
        return "Pass"
'''

EXAMPLE_POLICIES = {"kuhn_poker": KUHN_EXAMPLE}
