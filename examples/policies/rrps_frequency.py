"""RRPS example policy: counter the opponent's most frequent throw.

Game: rrps (repeated Rock-Paper-Scissors, 1000 throws). API: ``class Agent`` with
``act(observation) -> 'ROCK' | 'PAPER' | 'SCISSORS'``; the observation is the previous
throw, ``{'my_action': ..., 'opponent_action': ...}`` (both None at the first throw).

Strong against biased bots (rockbot, freqbot), easily exploited by adaptive ones: it
becomes predictable once the opponent's counts settle. Recent throws weigh more
(exponential decay) so it also follows drifting opponents.
"""

import random


class Agent:
    BEATS = {"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}

    def __init__(self, decay=0.98):
        self.decay = decay
        self.counts = {"ROCK": 0.0, "PAPER": 0.0, "SCISSORS": 0.0}
        self.rng = random.Random(12345)

    def act(self, observation: dict) -> str:
        last = observation["opponent_action"]
        if last is not None:
            for throw in self.counts:
                self.counts[throw] *= self.decay
            self.counts[last] += 1.0
        total = sum(self.counts.values())
        if total == 0.0:
            return self.rng.choice(["ROCK", "PAPER", "SCISSORS"])
        best = max(self.counts.values())
        likely = [t for t, c in self.counts.items() if c == best]
        return self.BEATS[self.rng.choice(likely)]
