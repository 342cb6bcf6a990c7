"""Kuhn poker example policy for the generic OpenSpiel API (game string: kuhn_poker).

API: ``class Agent`` with ``act(observation) -> str`` returning one of
``observation['legal_actions']`` (in Kuhn poker: 'Pass' or 'Bet'). The info_state string
is the private card (0 = Jack, 1 = Queen, 2 = King) followed by the actions so far
('p' = pass, 'b' = bet), e.g. '1pb'.

Strategy (close to a Kuhn equilibrium): always bet or call with the King; with the Jack,
bluff a third of the time as first player and otherwise pass/fold; with the Queen,
check, and call a bet a third of the time.
"""

import random


class Agent:
    def __init__(self):
        self.rng = random.Random(7)

    def act(self, observation: dict) -> str:
        info = observation["info_state"]
        card, history = int(info[0]), info[1:]
        facing_bet = "b" in history
        if card == 2:
            return "Bet"
        if card == 0:
            if not facing_bet and history == "" and self.rng.random() < 1 / 3:
                return "Bet"
            return "Pass"
        if facing_bet:
            return "Bet" if self.rng.random() < 1 / 3 else "Pass"
        return "Pass"
