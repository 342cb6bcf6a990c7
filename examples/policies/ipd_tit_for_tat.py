"""Tit for tat for the iterated prisoner's dilemma (``csro eval --game ipd --policy THIS``)."""


class Agent:
    """Cooperate first, then copy the opponent's previous action."""

    def act(self, observation: dict) -> str:
        return observation["opponent_action"] or "C"
