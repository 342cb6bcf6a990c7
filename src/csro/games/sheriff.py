"""Sheriff: an asymmetric two-player general-sum game whose seats play different roles.

OpenSpiel's ``sheriff`` (Farina, Ling, Fang, Sandholm, "Correlation in Extensive-Form Games:
Saddle-Point Formulation and Benchmarks", NeurIPS 2019) is a bargaining game between a
*smuggler* (seat 0) and a *sheriff* (seat 1): the smuggler loads 0..max_items illegal items
into its cargo (hidden from the sheriff), then for num_rounds rounds offers a bribe
(0..max_bribe, seen by the sheriff) and the sheriff answers whether it would inspect. Only
the last round counts: if the sheriff's last answer is not to inspect, the smuggler gets
item_value per item minus the last bribe and the sheriff the last bribe; if it inspects and
finds items, the smuggler pays item_penalty per item to the sheriff; if it inspects an
honest cargo, the sheriff pays sheriff_penalty to the smuggler (payoffs checked against the
engine in tests/games/test_sheriff.py). We chose it as the asymmetric game because the seats
differ in everything — actions, information and payoffs — while the tree stays small enough
for exact NashConv (4,681 information states with the defaults), and it is general-sum.

The rules and the policy API are the generic ones (``games.generic``: ``class Agent`` with
``act(observation)``; ``observation['player']`` is the seat), plus a role paragraph per seat
(``seat_rules_text``). Built-ins are *personas* that play both roles (so each one can fill
the other seat whichever seat a policy is evaluated in):

- ``honest``: loads nothing and never bribes; as sheriff never inspects.
- ``greedy``: loads the maximum and never bribes; as sheriff always inspects.
- ``briber``: loads the maximum and always offers the maximum bribe; as sheriff inspects
  exactly when the latest bribe is 0.

The evaluation population of either seat is the three personas and ``random``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from csro.games._base import BuiltinInstance, BuiltinPolicy, Match, Request
from csro.games._common import UniformRandom
from csro.games.generic import GenericGame

ROLES = ("smuggler", "sheriff")

ROLE_TEXT = {
    0: ("You play seat 0, the smuggler. Your first action loads illegal items into your cargo "
        "('PlaceIllegalItems(num=k)'); the sheriff never sees how many. Then, each round, you offer "
        "a bribe ('Bribe(amount=k)') and see the sheriff's answer. Your info_state lists your "
        "cargo, your bribes and the sheriff's answers ('feedback:1' = would inspect)."),
    1: ("You play seat 1, the sheriff. You never see the cargo. Each round you see the "
        "smuggler's bribe and answer whether you would inspect "
        "('InspectionFeedback(will_inspect=True|False)'); your last answer is the decision. "
        "Your info_state lists the bribes and your answers so far."),
}

PERSONAS = {
    # name: (items: "none" | "max", bribe: "none" | "max", inspects: "never" | "always" | "unbribed")
    "honest": ("none", "none", "never"),
    "greedy": ("max", "none", "always"),
    "briber": ("max", "max", "unbribed"),
}

_LAST_BRIBE = re.compile(r"bribe:(\d+)")


class _PersonaInstance(BuiltinInstance):
    def __init__(self, items: str, bribe: str, inspects: str):
        self._items, self._bribe, self._inspects = items, bribe, inspects

    def respond(self, request: Request, match: Match) -> Any:
        legal = request.legal
        if legal is None:
            return None
        if legal[0].startswith("PlaceIllegalItems"):
            return legal[0] if self._items == "none" else legal[-1]
        if legal[0].startswith("Bribe"):
            return legal[0] if self._bribe == "none" else legal[-1]
        bribes = _LAST_BRIBE.findall(request.args[0]["info_state"])
        inspect = {"never": False, "always": True, "unbribed": not bribes or bribes[-1] == "0"}[self._inspects]
        return f"InspectionFeedback(will_inspect={inspect})"


class Persona(BuiltinPolicy):
    """A deterministic sheriff persona playing both roles (see the module docstring)."""

    def __init__(self, name: str):
        self.name = name
        items, bribe, inspects = PERSONAS[name]
        self.description = (f"sheriff persona: smuggler loads {items} and bribes {bribe}; "
                            f"as sheriff inspects {inspects}")
        self._behaviour = PERSONAS[name]

    def instance(self, seat: int, seed: int) -> BuiltinInstance:
        return _PersonaInstance(*self._behaviour)


EXAMPLE_POLICY = '''\
class Agent:
    """A cautious smuggler and a suspicious sheriff.

    Smuggler: load one item and offer a bribe of 1 every round.
    Sheriff: inspect unless the latest bribe is at least 2.
    """

    def act(self, observation: dict) -> str:
        legal = observation["legal_actions"]
        if observation["player"] == 0:  # smuggler
            wanted = "PlaceIllegalItems(num=1)" if legal[0].startswith("Place") else "Bribe(amount=1)"
            return wanted if wanted in legal else legal[0]
        bribes = [int(part.split(":")[1]) for part in observation["info_state"].split("/")
                  if part.startswith("bribe:")]
        inspect = not bribes or bribes[-1] < 2
        return f"InspectionFeedback(will_inspect={inspect})"
'''


class SheriffGame(GenericGame):
    """OpenSpiel's sheriff with per-seat roles and persona built-ins (``sheriff``, any parameters)."""

    seat_roles = ROLES

    def __init__(self, game_string: str, os_game=None):
        super().__init__(game_string, os_game)
        self.example_policy = EXAMPLE_POLICY

    def seat_rules_text(self, seat: int) -> str:
        return f"{self.rules_text}\n{ROLE_TEXT[seat]}\n"

    @functools.cache
    def builtins(self) -> dict[str, BuiltinPolicy]:
        table: dict[str, BuiltinPolicy] = {name: Persona(name) for name in PERSONAS}
        table["random"] = UniformRandom()
        return table

    def population(self) -> list[str]:
        return [f"builtin:{name}" for name in (*PERSONAS, "random")]
