"""Repeated Leduc hold'em example policy: hand strength plus a little opponent modelling.

Game: leduc (100 hands, seats permuted per hand, OpenSpiel's leduc_poker rules: antes of
1, raises of 2 preflop and 4 postflop, at most 2 raises a round). API:
``class RepeatedLeducPokerBot`` with ``restart(player_id)``, ``act(observation)`` returning
one of ``observation['player_view']['legal_actions']`` ('FOLD' | 'CALL' | 'RAISE'), and
``receive_outcome(observation)``.

Strategy: raise with a pair or a King, call with a Queen, fold a Jack facing a bet —
unless the opponent has been caught bluffing often at showdowns, then call down lighter.
"""


class RepeatedLeducPokerBot:
    STRENGTH = {"J": 0, "Q": 1, "K": 2}

    def __init__(self):
        self.player_id = 0
        self.showdowns = 0
        self.bluffs = 0  # showdowns where the opponent raised holding a Jack unpaired

    def restart(self, player_id):
        self.player_id = player_id

    def strength(self, hand, public):
        if public is not None and hand == public:
            return 3
        return self.STRENGTH[hand]

    def act(self, observation):
        view = observation["player_view"]
        legal = view["legal_actions"]
        public = observation["public_state"]["public_card"]
        s = self.strength(view["hand"], public)
        if s >= 2 and "RAISE" in legal:
            return "RAISE"
        if "FOLD" in legal:  # facing a bet
            loose = self.showdowns >= 5 and self.bluffs / self.showdowns > 0.3
            if s == 0 and not loose:
                return "FOLD"
        return "CALL"

    def receive_outcome(self, observation):
        result = observation["game_result"]
        if result["outcome"] != "SHOWDOWN":
            return
        self.showdowns += 1
        opponent = 1 - self.player_id
        their_hand = result["showdown_hands"][opponent]
        public = observation["public_state"]["public_card"]
        history = observation["action_history"]
        their_raises = [
            a
            for round_actions in (history["PREFLOP"], history["POSTFLOP"])
            for i, a in enumerate(round_actions)
            if i % 2 == opponent and a == "RAISE"
        ]
        if their_raises and self.strength(their_hand, public) == 0:
            self.bluffs += 1
