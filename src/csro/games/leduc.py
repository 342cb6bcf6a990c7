"""Repeated Leduc hold'em as code policies see it.

The game of the CSRO paper (Hennes, Li, Schultz, Lanctot, "Code-Space Response Oracles",
arXiv 2603.10098): 100 hands of Leduc hold'em per match, seats randomly permuted per
hand, returns in chips summed over the hands. Policy API (the paper's):
``class RepeatedLeducPokerBot`` with ``restart(player_id)`` at each hand start,
``act(observation) -> 'FOLD' | 'CALL' | 'RAISE'``, ``receive_outcome(observation)`` at
each hand end, and the observation dict of the paper (see ``API_SPEC``).

Engine. Every hand is played on a fresh OpenSpiel ``leduc_poker`` state (all rules,
legal actions, pot, showdown and payoffs are OpenSpiel's). We do not use OpenSpiel's
``repeated_leduc_poker(num_hands=100)`` because (a) it keeps OpenSpiel player 0 as the
first to act in every hand, while the paper permutes seats per hand; (b) it inserts
``Continue`` actions between hands and issues each player's reward at a different step;
and (c) its Python state is a plain ``pyspiel.State``, without the ``LeducState``
accessors (private cards, public card, pot, money, per-round action sequences) the
observation dict is built from — it offers only strings we would have to parse. Both
games use the same per-hand chip accounting (every hand starts at 100 chips each), so
the match returns are the same quantity.

Our interpretations (the paper is silent or speaks loosely):
  * Antes, not blinds: OpenSpiel's Leduc has both players ante 1 chip (the paper's rules
    text spoke of blinds). Raises are 2 chips preflop and 4 postflop, at most 2 raises
    per round, and FOLD is only legal when facing a bet.
  * ``player_id`` is the OpenSpiel player of the hand; player 0 acts first in both
    betting rounds. Which match seat gets player 0 is drawn per hand from the match
    seed; so are the cards (pre-drawn uniforms, inverse-CDF over OpenSpiel's
    ``chance_outcomes()``), so the deal of hand h is the same whatever was played before:
    common random numbers across policies.
  * ``chips`` are the chips each player has left *in this hand* (100 minus what they put
    in; after the hand, plus what they won), ``pot_size`` is OpenSpiel's pot (0 once it
    has been paid out, i.e. in ``receive_outcome``). ``action_history`` lists the
    action strings of each betting round in order. ``showdown_hands`` is the card rank
    of every player (indexed by player id) at a showdown and ``[]`` when the hand ended
    by a fold. Card suits are dropped: they never matter in OpenSpiel's Leduc.
  * Requests per hand: one round with ``restart`` for both seats, one round per action,
    one round with ``receive_outcome`` for both seats (at most one request per seat in
    a round, as the runner expects).
  * return_range: one hand can lose at most ante 1 + 2 raises x 2 + 2 raises x 4 = 13
    chips (OpenSpiel's ``leduc_poker`` min_utility), so a 100-hand match is in
    [-1300, 1300].

Built-ins: ``cfr_plus`` (average policy of ``pyspiel.CFRPlusSolver`` on single-hand
``leduc_poker``, cached on disk, see ``cfr_plus_policy``), ``always_call``,
``always_fold`` (folds whenever it can, else calls), ``random``.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import pathlib
import time
from typing import Any, Sequence

import pyspiel

from csro.errors import IllegalAction
from csro.games._base import (
    BuiltinInstance,
    BuiltinPolicy,
    CodeGame,
    Match,
    Request,
    forfeit_returns,
)
from csro.games._common import (
    UniformRandom,
    plain_number,
    rng,
    sample_chance,
    sample_from,
)

NUM_HANDS = 100
ACTIONS: tuple[str, ...] = ("FOLD", "CALL", "RAISE")  # OpenSpiel's action ids 0, 1, 2
_INDEX = {name: i for i, name in enumerate(ACTIONS)}
_RANKS = ("J", "Q", "K")  # card c has rank c // 2 in OpenSpiel's two-suit deck
_ROUNDS = ("PREFLOP", "POSTFLOP")
MAX_LOSS_PER_HAND = 13  # ante 1 + 2 raises of 2 + 2 raises of 4 (OpenSpiel's min_utility)

_RESTART, _ACT, _OUTCOME, _OVER = range(4)


class LeducMatch(Match):
    """One match of ``num_hands`` hands between seats 0 and 1.

    ``state`` is the OpenSpiel ``leduc_poker`` state of the current hand;
    ``player_of_seat[s]`` the OpenSpiel player seat ``s`` is in this hand.
    """

    def __init__(self, game: pyspiel.Game, num_hands: int, seed: int):
        self._game = game
        self.seed = seed
        self.num_hands = num_hands
        g = rng(seed)
        # Per hand: who sits where, and three uniforms for the (at most) three deals.
        self._perms = [tuple(int(p) for p in g.permutation(2)) for _ in range(num_hands)]
        self._uniforms = g.random((num_hands, 3)).tolist()
        self.hand = -1
        self.seat_returns = [0.0, 0.0]
        self.hand_returns: list[list[float]] = []  # per hand, per seat
        self._forfeit: list[float] | None = None
        self._pending: list[Request] | None = None
        self._legal: dict[str, int] = {}
        self._start_hand()

    # -- hand lifecycle ---------------------------------------------------------------
    def _start_hand(self) -> None:
        self.hand += 1
        self.player_of_seat = self._perms[self.hand]
        self.seat_of_player = tuple(sorted(range(2), key=lambda s: self.player_of_seat[s]))
        self.state = self._game.new_initial_state()
        self._chance_used = 0
        self._deal()
        self._phase = _RESTART

    def _deal(self) -> None:
        state = self.state
        while state.is_chance_node():
            state.apply_action(sample_chance(state, self._uniforms[self.hand][self._chance_used]))
            self._chance_used += 1

    # -- observations -----------------------------------------------------------------
    def observation(self, player: int) -> dict:
        """The paper's observation dict for OpenSpiel ``player`` of the current hand."""
        s = self.state
        terminal = s.is_terminal()
        to_act = not terminal and s.current_player() == player
        cards = s.get_private_cards()
        public = s.public_card()
        r1 = [ACTIONS[a] for a in s.round1()]
        r2 = [ACTIONS[a] for a in s.round2()]
        result = None
        if terminal:
            showdown = "FOLD" not in r1 and "FOLD" not in r2
            result = {
                "outcome": "SHOWDOWN" if showdown else "FOLD",
                "returns": [plain_number(x) for x in s.returns()],
                "showdown_hands": [_RANKS[c // 2] for c in cards] if showdown else [],
            }
        return {
            "player_view": {
                "player_id": player,
                "current_player": to_act,
                "hand": _RANKS[cards[player] // 2],
                "legal_actions": [ACTIONS[a] for a in s.legal_actions()] if to_act else [],
            },
            "public_state": {
                "round": _ROUNDS[s.round() - 1],
                "chips": [plain_number(m) for m in s.money()],
                "pot_size": plain_number(s.pot()),
                "public_card": None if public < 0 else _RANKS[public // 2],
            },
            "action_history": {"PREFLOP": r1, "POSTFLOP": r2},
            "game_result": result,
        }

    # -- Match API ----------------------------------------------------------------------
    def pending(self) -> list[Request]:
        if self._pending is None:
            self._pending = self._requests()
        return list(self._pending)

    def _requests(self) -> list[Request]:
        phase = self._phase
        if phase == _OVER:
            return []
        pos = self.player_of_seat
        if phase == _RESTART:
            return [Request(seat, "restart", (pos[seat],)) for seat in range(2)]
        if phase == _OUTCOME:
            return [
                Request(seat, "receive_outcome", (self.observation(pos[seat]),))
                for seat in range(2)
            ]
        player = self.state.current_player()
        obs = self.observation(player)
        legal = obs["player_view"]["legal_actions"]
        self._legal = {a: _INDEX[a] for a in legal}
        return [Request(self.seat_of_player[player], "act", (obs,), tuple(legal))]

    def answer(self, replies: Sequence[Any]) -> None:
        phase = self._phase
        if phase == _OVER:
            raise RuntimeError("answer() on a finished match")
        if self._pending is None:
            self._pending = self._requests()
        if len(replies) != len(self._pending):
            raise ValueError(f"{len(replies)} replies for {len(self._pending)} requests")
        if phase == _RESTART:
            self._phase = _ACT
        elif phase == _OUTCOME:
            if self.hand + 1 == self.num_hands:
                self._phase = _OVER
            else:
                self._start_hand()
        else:
            reply = replies[0]
            try:
                action = self._legal[reply]
            except (KeyError, TypeError):
                req = self._pending[0]
                raise IllegalAction(req.seat, reply, req.legal) from None
            self.state.apply_action(action)
            self._deal()
            if self.state.is_terminal():
                hand = self.state.returns()
                per_seat = [hand[self.player_of_seat[s]] for s in range(2)]
                self.hand_returns.append(per_seat)
                self.seat_returns[0] += per_seat[0]
                self.seat_returns[1] += per_seat[1]
                self._phase = _OUTCOME
        self._pending = None

    def returns(self) -> list[float]:
        if self._forfeit is not None:
            return list(self._forfeit)
        return list(self.seat_returns)

    def forfeit(self, seat: int) -> None:
        self._forfeit = forfeit_returns(2, seat, -float(MAX_LOSS_PER_HAND * self.num_hands))
        self._phase = _OVER
        self._pending = None

    @property
    def over(self) -> bool:
        return self._phase == _OVER


# -- built-ins ------------------------------------------------------------------------
class _FixedInstance(BuiltinInstance):
    __slots__ = ("_prefer",)

    def __init__(self, prefer: str):
        self._prefer = prefer

    def respond(self, request: Request, match: Match) -> Any:
        if request.legal is None:
            return None
        return self._prefer if self._prefer in request.legal else "CALL"


class AlwaysCall(BuiltinPolicy):
    name = "always_call"
    description = "always CALL (check when not facing a bet)"

    def instance(self, seat: int, seed: int) -> BuiltinInstance:
        return _FixedInstance("CALL")


class AlwaysFold(BuiltinPolicy):
    name = "always_fold"
    description = "FOLD whenever it is legal (facing a bet), else CALL"

    def instance(self, seat: int, seed: int) -> BuiltinInstance:
        return _FixedInstance("FOLD")


SHIPPED = pathlib.Path(__file__).with_name("data")  # solver tables that ship with csro (``cfr_plus_policy``)


def cache_dir() -> pathlib.Path:
    """``$CSRO_CACHE_DIR``, else ``~/.cache/csro``."""
    env = os.environ.get("CSRO_CACHE_DIR")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "csro"


def cfr_plus_policy(iterations: int = 10_000, game: str = "leduc_poker") -> dict:
    """CFR+'s average policy on ``game`` after ``iterations``: {info state: {action: prob}}.

    Computed once with ``pyspiel.CFRPlusSolver`` and cached as JSON in ``cache_dir()``
    under ``cfr_plus-<game>-<iterations>.json`` (written atomically; a lock file makes
    concurrent processes wait for the first solver). 10,000 iterations on leduc_poker
    take 1.5-2 minutes on one core (97 s and 119 s measured; exploitability 6.5e-6);
    1,000 take ~10 s (exploitability 2.6e-4). The built-in's table (10,000 on leduc_poker)
    ships with the package in ``SHIPPED`` (this function's own output, written with
    ``CSRO_CACHE_DIR`` pointing there; its NashConv is checked in tests/games/test_leduc.py),
    so no machine spends those minutes before its first Leduc match.
    """
    name = f"cfr_plus-{game}-{iterations}.json"
    shipped = _read_policy(SHIPPED / name)
    if shipped is not None:
        return shipped
    path = cache_dir() / name
    cached = _read_policy(path)
    if cached is not None:
        return cached
    path.parent.mkdir(parents=True, exist_ok=True)
    # Parallel runner processes wait for the first one instead of all solving at once.
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cached = _read_policy(path)
        if cached is not None:
            return cached
        return _solve_and_write(path, game, iterations)


def _read_policy(path: pathlib.Path) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)["policy"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _solve_and_write(path: pathlib.Path, game: str, iterations: int) -> dict:
    os_game = pyspiel.load_game(game)
    solver = pyspiel.CFRPlusSolver(os_game)
    start = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    seconds = time.perf_counter() - start
    table = solver.tabular_average_policy().policy_table()
    policy = {
        info: {ACTIONS[a]: p for a, p in action_probs} for info, action_probs in table.items()
    }
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump(
            {
                "game": game,
                "solver": "pyspiel.CFRPlusSolver",
                "iterations": iterations,
                "kind": "average policy",
                "seconds": round(seconds, 1),
                "policy": policy,
            },
            f,
        )
    os.replace(tmp, path)
    return policy


class _TableInstance(BuiltinInstance):
    __slots__ = ("_table", "_rng")

    def __init__(self, table: dict, seed: int):
        self._table = table
        self._rng = rng(seed)

    def respond(self, request: Request, match: Match) -> Any:
        if request.legal is None:
            return None
        state = match.state
        probs = self._table.get(state.information_state_string(state.current_player()))
        u = self._rng.random()
        if not probs:
            return request.legal[int(u * len(request.legal))]
        return sample_from(tuple(probs), tuple(probs.values()), u)


class CfrPlus(BuiltinPolicy):
    """``cfr_plus``: CFR+ average policy of single-hand Leduc, played hand by hand."""

    name = "cfr_plus"

    def __init__(self, iterations: int = 10_000):
        self.iterations = iterations
        self.description = (
            f"CFR+ equilibrium of single-hand Leduc ({iterations} iterations, average policy)"
        )
        self._table: dict | None = None

    def table(self) -> dict:
        if self._table is None:
            self._table = cfr_plus_policy(self.iterations)
        return self._table

    def instance(self, seat: int, seed: int) -> BuiltinInstance:
        return _TableInstance(self.table(), seed)


# -- texts ----------------------------------------------------------------------------
RULES_TEXT = """\
Repeated Leduc hold'em, {n} hands per match, two players (OpenSpiel's leduc_poker rules).

The deck has six cards: two Jacks, two Queens and two Kings (J < Q < K; suits never
matter). Every hand is independent: each player starts the hand with 100 chips and puts
an ante of 1 chip into the pot (there are no blinds). Each player is dealt one private
card.

Round 1 (PREFLOP): player 0 acts first. A player may CALL (put in enough to match the
current bet; with no bet to match this is a check), RAISE (match, then raise by 2
chips), or FOLD (give up the hand; only allowed when facing a bet). At most 2 raises are
allowed per round. The round ends when a player calls a bet, or when both players have
checked.
Then one public card is dealt face up.
Round 2 (POSTFLOP): the same as round 1, again starting with player 0, but raises are 4
chips.

If a player folds, the other wins the pot. Otherwise there is a showdown: a player whose
private card has the same rank as the public card (a pair) wins; otherwise the higher
private card wins; equal ranks split the pot. A hand's return is the chips won minus
the chips put in: at most 13 chips can be won or lost in one hand (1 + 2*2 + 2*4).

Seats are shuffled every hand: your player_id (0 = acts first in both rounds, or 1) is
told at the start of each hand and can change between hands. Your match return is the
sum of your chip returns over the {n} hands, between -{max} and +{max}. The same policy
object plays the whole match, so it can learn the opponent's tendencies across hands
(the opponent's card is only revealed at a showdown). The objective is to maximize your
total chips won against your opponents.
"""

API_SPEC = '''\
class RepeatedLeducPokerBot:
    """A repeated Leduc hold'em policy. One instance plays one whole match ({n} hands).

    The runner creates the object with no arguments. For every hand it calls
    ``restart(player_id)``, then ``act(observation)`` each time it is your turn, then
    ``receive_outcome(observation)`` once the hand is over. Keep whatever state you need
    on ``self``. Only the Python standard library (and numpy, if available) may be
    imported.
    """

    def __init__(self):
        ...

    def restart(self, player_id: int) -> None:
        """A new hand starts; you are OpenSpiel player ``player_id`` (0 or 1) in it.

        Player 0 acts first in both betting rounds. The seat assignment is random per
        hand, so ``player_id`` may change from hand to hand.
        """

    def act(self, observation: dict) -> str:
        """Choose an action. ``observation`` is (example, start of a hand as player 0):

          {{'player_view': {{'player_id': 0,            # your player id in this hand
                           'current_player': True,    # it is your turn
                           'hand': 'K',               # your private card: 'J', 'Q' or 'K'
                           'legal_actions': ['CALL', 'RAISE']}},
           'public_state': {{'round': 'PREFLOP',        # 'PREFLOP' or 'POSTFLOP'
                            'chips': [99, 99],         # chips left this hand, per player id
                            'pot_size': 2,             # chips in the pot
                            'public_card': None}},      # 'J'/'Q'/'K' once dealt, else None
           'action_history': {{'PREFLOP': [],            # actions of each round, in order,
                              'POSTFLOP': []}},          # e.g. ['RAISE', 'CALL']
           'game_result': None}}

        Each round's actions alternate starting with player 0, so
        ``action_history['PREFLOP'][i]`` was taken by player ``i % 2``.

        Returns:
          One of ``observation['player_view']['legal_actions']``, a subset of
          'FOLD', 'CALL', 'RAISE' (exactly these strings): FOLD only when facing a bet,
          RAISE only while fewer than 2 raises were made this round, CALL always (it
          checks when there is no bet). Anything else, an exception, or a timeout
          forfeits the match.
        """

    def receive_outcome(self, observation: dict) -> None:
        """The hand is over. ``observation`` has the same keys as in ``act``, with
        ``current_player`` False, ``legal_actions`` [], the final ``action_history``,
        ``chips`` after the pot was paid out (``pot_size`` 0), and

          'game_result': {{'outcome': 'FOLD' or 'SHOWDOWN',
                          'returns': [r0, r1],          # chips won this hand, per player id
                          'showdown_hands': ['Q', 'K']}}  # every player's card, per player
                                                        # id; [] when the hand ended by a fold
        """
'''

EXAMPLE_POLICY = '''\
class RepeatedLeducPokerBot:
    """Bets by hand strength: raises pairs and Kings, calls Queens, folds weak hands to bets."""

    STRENGTH = {"J": 0, "Q": 1, "K": 2}

    def __init__(self):
        self.player_id = 0
        self.total = 0

    def restart(self, player_id):
        self.player_id = player_id

    def act(self, observation):
        view = observation["player_view"]
        public = observation["public_state"]["public_card"]
        legal = view["legal_actions"]
        hand = view["hand"]
        if public is not None and hand == public:
            strength = 3  # a pair beats any unpaired hand
        else:
            strength = self.STRENGTH[hand]
        if strength >= 2 and "RAISE" in legal:
            return "RAISE"
        if strength == 0 and "FOLD" in legal:
            return "FOLD"
        return "CALL"

    def receive_outcome(self, observation):
        self.total += observation["game_result"]["returns"][self.player_id]
'''


class LeducGame(CodeGame):
    """Repeated Leduc hold'em with seats permuted per hand (``leduc``)."""

    policy_class = "RepeatedLeducPokerBot"
    num_players = 2

    def __init__(self, num_hands: int = NUM_HANDS, cfr_iterations: int = 10_000):
        self.num_hands = num_hands
        self.cfr_iterations = cfr_iterations
        self.name = "leduc" if num_hands == NUM_HANDS else f"leduc(num_hands={num_hands})"
        self.description = (
            f"Repeated Leduc hold'em, {num_hands} hands, seats permuted per hand; "
            "population: CFR+, AlwaysCall, AlwaysFold"
        )
        self.openspiel_game = pyspiel.load_game("leduc_poker")
        bound = float(MAX_LOSS_PER_HAND * num_hands)
        assert self.openspiel_game.min_utility() == -MAX_LOSS_PER_HAND
        self.return_range = (-bound, bound)
        self.rules_text = RULES_TEXT.format(n=num_hands, max=int(bound))
        self.api_spec = API_SPEC.format(n=num_hands)
        self.example_policy = EXAMPLE_POLICY

    def new_match(self, seed: int) -> LeducMatch:
        return LeducMatch(self.openspiel_game, self.num_hands, seed)

    @functools.cache
    def builtins(self) -> dict[str, BuiltinPolicy]:
        return {
            "cfr_plus": CfrPlus(self.cfr_iterations),
            "always_call": AlwaysCall(),
            "always_fold": AlwaysFold(),
            "random": UniformRandom(),
        }

    def population(self) -> list[str]:
        return ["builtin:cfr_plus", "builtin:always_call", "builtin:always_fold"]

    @property
    def check_matches(self) -> int:
        return 1  # seats are permuted every hand: one match plays both roles
