"""RRPS bench opponent: an order-1 Markov predictor of the other player's next throw.

Counts, for each throw of the other player, which throw followed it; plays what beats the
most likely successor of the last throw (random until it has seen a transition). A plausible
program for an LLM oracle to write; one of sigma's three code opponents in
bench/valid_rate.py (not an evaluation bot).
"""

import random

MOVES = ("ROCK", "PAPER", "SCISSORS")
BEATS = {"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}


class Agent:
    def __init__(self):
        self.transitions = {a: {b: 0 for b in MOVES} for a in MOVES}
        self.previous = None

    def act(self, observation: dict) -> str:
        last = observation["opponent_action"]
        if last is not None and self.previous is not None:
            self.transitions[self.previous][last] += 1
        self.previous = last
        if last is None or sum(self.transitions[last].values()) == 0:
            return random.choice(MOVES)
        following = self.transitions[last]
        return BEATS[max(following, key=following.get)]
