"""Which policies' instances may share one run of the module (``csro.policies._sharing``).

A policy whose module cannot carry state between instances shares one class in the worker;
any other gets a fresh copy of the module per instance (issue 28: a match's result is a
function of its seed alone). The unit tests run the analysis on modules run in this process
(our own test sources); the end-to-end tests ask real sandboxed workers.
"""

from __future__ import annotations

import ast
import pathlib
import sys
import textwrap
import types

import pytest

from csro.games.rrps import EXAMPLE_POLICY, RRPS_HEADER
from csro.policies import Call, PolicyWorker, SandboxLimits, _sharing

ROOT = pathlib.Path(__file__).resolve().parents[2]


def reason(source: str) -> str | None:
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    module = types.ModuleType("policy")
    saved = sys.modules.get("policy")
    sys.modules["policy"] = module
    try:
        exec(compile(tree, "<policy>", "exec"), module.__dict__)  # our own test sources
    finally:
        if saved is None:
            del sys.modules["policy"]
        else:
            sys.modules["policy"] = saved
    return _sharing.reason_to_copy(tree, module)


SHAREABLE = {
    "constants and reads": """
        import random
        from collections import Counter
        MOVES = ["ROCK", "PAPER", "SCISSORS"]
        BEATS = {"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}
        LIMIT = (1, 2.5, "x", None, frozenset({3}))

        def beat(move):
            return BEATS[move]

        class Base:
            WEIGHTS = [1, 2, 3]

            def __init__(self, decay=0.9):
                self.decay = decay

        class Agent(Base):
            __slots__ = ("seen", "rng", "decay")

            def __init__(self):
                super().__init__()
                self.seen = Counter()
                self.rng = random.Random(7)

            def act(self, observation):
                last = observation["opponent_action"]
                if last in BEATS:
                    self.seen[last] += 1
                for move in MOVES:
                    self.seen[move] *= self.decay
                order = sorted(MOVES, key=lambda m: (self.seen[m], BEATS.get(m)))
                pick = self.rng.choice(MOVES) if len(self.WEIGHTS) > 5 else random.choice(order)
                return beat(pick) if pick in Agent.WEIGHTS or True else MOVES[0]
    """,
    "class counters kept on self": """
        class Agent:
            calls = 0

            def act(self, observation):
                self.calls += 1
                return ("ROCK", "PAPER")[self.calls % 2]
    """,
}


EXAMPLES = sorted((ROOT / "examples" / "policies").glob("*.py"))


@pytest.mark.parametrize("source", [EXAMPLE_POLICY, RRPS_HEADER + "        return 'ROCK'\n", *EXAMPLES,
                                    *SHAREABLE.values()],
                         ids=["rrps example", "rrps grammar", *(p.name for p in EXAMPLES), *SHAREABLE])
def test_a_module_that_holds_only_constants_is_shared(source):
    text = source.read_text() if isinstance(source, pathlib.Path) else source
    assert reason(text) is None


# (a module whose instances could pass state through it, what the reason names)
# A counter kept in a closure: module state no attribute assignment shows (both tables use it).
COUNTER = """
        def counter():
            n = 0
            def bump():
                nonlocal n
                n += 1
                return n
            return bump
        BUMP = counter()
"""

COPIED = {
    "module list mutated in a method": ("""
        HISTORY = []
        class Agent:
            def act(self, observation):
                HISTORY.append(observation)
                return "ROCK"
    """, "HISTORY"),
    "global statement": ("""
        COUNT = 0
        class Agent:
            def act(self, observation):
                global COUNT
                COUNT += 1
                return "ROCK"
    """, "global"),
    "class attribute dict written through self": ("""
        class Agent:
            TABLE = {}
            def act(self, observation):
                self.TABLE["n"] = 1
                return "ROCK"
    """, "TABLE"),
    "class list extended in place through self": ("""
        class Agent:
            SEEN = ["ROCK"]
            def act(self, observation):
                self.SEEN += ["PAPER"]
                return "ROCK"
    """, "SEEN"),
    "class list shuffled": ("""
        import random
        class Agent:
            MOVES = ["ROCK", "PAPER"]
            def act(self, observation):
                random.shuffle(self.MOVES)
                return self.MOVES[0]
    """, "MOVES"),
    "class list handed out": ("""
        class Agent:
            MOVES = ["ROCK", "PAPER"]
            def mine(self):
                return self.MOVES
            def act(self, observation):
                self.mine().append("X")
                return "ROCK"
    """, "MOVES"),
    "default argument list": ("""
        class Agent:
            def act(self, observation, seen=[]):
                seen.append(1)
                return "ROCK"
    """, "default"),
    "module object whose attribute is set": ("""
        class Box:
            pass
        BOX = Box()
        class Agent:
            def act(self, observation):
                BOX.n = 1
                return "ROCK"
    """, "BOX"),
    "setattr on the class": ("""
        class Agent:
            def act(self, observation):
                setattr(type(self), "n", 1)
                return "ROCK"
    """, "setattr"),
    "type(self) attribute": ("""
        class Agent:
            n = 0
            def act(self, observation):
                type(self).n += 1
                return "ROCK"
    """, "other than self"),
    "__class__ attribute": ("""
        class Agent:
            n = 0
            def act(self, observation):
                self.__class__.n += 1
                return "ROCK"
    """, "other than self"),
    "class attribute assigned by name": ("""
        class Agent:
            n = 0
            def act(self, observation):
                Agent.n += 1
                return "ROCK"
    """, "other than self"),
    "a method called with the class as self": ("""
        class Agent:
            def note(self, value):
                self.last = value
            def act(self, observation):
                Agent.note(Agent, observation)
                return "ROCK"
    """, "class 'Agent'"),
    "a method rewrapped as a staticmethod": ("""
        def helper():
            pass
        class Agent:
            def poke(obj):
                obj.calls = 1
            poke = staticmethod(poke)
            def act(self, observation):
                self.poke(helper)
                return "ROCK"
    """, "poke"),
    "classmethod storing on cls": ("""
        class Agent:
            @classmethod
            def bump(cls):
                cls.n = 1
            def act(self, observation):
                self.bump()
                return "ROCK"
    """, "other than self"),
    "self rebound": ("""
        class Box:
            pass
        class Agent:
            def act(self, observation, box=None):
                self = box or self
                self.n = 1
                return "ROCK"
    """, "other than self"),
    "sys.modules of the policy": ("""
        import sys
        class Agent:
            def act(self, observation):
                sys.modules[__name__].n = 1
                return "ROCK"
    """, "sys"),
    "builtins": ("""
        import builtins
        class Agent:
            def act(self, observation):
                builtins.n = 1
                return "ROCK"
    """, "builtins"),
    "nonlocal closure": (COUNTER + """
        class Agent:
            def act(self, observation):
                return ("ROCK", "PAPER")[BUMP() % 2]
    """, "closure"),
    "closure over a list": ("""
        def pusher():
            box = []
            return lambda v: box.append(v) or len(box)
        PUSH = pusher()
        class Agent:
            def act(self, observation):
                return ("ROCK", "PAPER")[PUSH(1) % 2]
    """, "closure"),
    "a generator at module level": ("""
        import random
        RNG = random.Random(1)
        class Agent:
            def act(self, observation):
                return RNG.choice(["ROCK", "PAPER"])
    """, "Random"),
    "a cache on a method": ("""
        import functools
        class Agent:
            @functools.lru_cache(maxsize=None)
            def score(self, move):
                return len(move)
            def act(self, observation):
                return "ROCK"
    """, "score"),
    "a bound method of a module list": ("""
        SEEN = []
        PUSH = SEEN.append
        class Agent:
            def act(self, observation):
                PUSH(1)
                return "ROCK"
    """, "PUSH"),
    "a container handed to an __eq__": ("""
        class Grab:
            def __eq__(self, other):
                other.append("X")
                return False
        class Agent:
            MOVES = ["ROCK"]
            def act(self, observation):
                return "ROCK" if self.MOVES == Grab() else "PAPER"
    """, "MOVES"),
    "a choice answered by __getattr__": ("""
        class Grab:
            def __getattr__(self, name):
                return lambda seq: seq.append("X")
        class Agent:
            MOVES = ["ROCK"]
            def act(self, observation):
                Grab().choice(self.MOVES)
                return "ROCK"
    """, "MOVES"),
    "a string naming a container": ("""
        class Agent:
            MOVES = ["ROCK"]
            def act(self, observation):
                return "MOVES"
    """, "MOVES"),
    "attrgetter of a computed name": ("""
        import operator
        class Agent:
            TABLE = {}
            def act(self, observation):
                operator.attrgetter("TAB" + "LE")(self)["n"] = 1
                return "ROCK"
    """, "operator"),
    "a string formatter's field": ("""
        import string
        class Agent:
            TABLE = {}
            def act(self, observation):
                string.Formatter().get_field("0.TAB" + "LE", (self,), {})[0]["n"] = 1
                return "ROCK"
    """, "string"),
    "a class pattern": ("""
        class Agent:
            TABLE = {}
            def act(self, observation):
                match self:
                    case object(TABLE=table):
                        table["n"] = 1
                return "ROCK"
    """, "class pattern"),
    "getattr": ("""
        class Agent:
            MOVES = ["ROCK"]
            def act(self, observation):
                getattr(self, "MO" + "VES").append("PAPER")
                return "ROCK"
    """, "getattr"),
    "a container of mutable objects": ("""
        TABLE = {"ROCK": [0]}
        class Agent:
            def act(self, observation):
                TABLE["ROCK"][0] += 1
                return "ROCK"
    """, "TABLE"),
    "a metaclass": ("""
        import abc
        class Agent(abc.ABC):
            def act(self, observation):
                return "ROCK"
    """, "metaclass"),
    "a dataclass": ("""
        import dataclasses
        @dataclasses.dataclass
        class Agent:
            n: int = 0
            def act(self, observation):
                return "ROCK"
    """, "dataclass"),
    "a descriptor instance on the class": ("""
        class Slot:
            def __get__(self, obj, owner):
                return 1
        class Agent:
            value = Slot()
            def act(self, observation):
                return "ROCK"
    """, "value"),
    "a nested class": ("""
        class Agent:
            class Memory:
                seen = 0
            def act(self, observation):
                return "ROCK"
    """, "Memory"),
    "numpy": ("""
        import numpy
        class Agent:
            def act(self, observation):
                return "ROCK"
    """, "numpy"),
    "a function attribute": ("""
        def helper():
            return 1
        helper.calls = 0
        class Agent:
            def act(self, observation):
                return "ROCK"
    """, "attributes of its own"),
    "vars of the class": ("""
        class Agent:
            n = 0
            def act(self, observation):
                vars(Agent)
                return "ROCK"
    """, "vars"),
}


@pytest.mark.parametrize("case", COPIED)
def test_a_module_that_could_carry_state_is_copied_per_instance(case):
    source, named = COPIED[case]
    why = reason(source)
    assert why is not None and named in why, why


def test_a_class_that_claims_another_module_is_still_the_policys():
    import collections
    module = types.ModuleType("policy")
    fake = collections.namedtuple("Fake", "a", module="random")
    assert _sharing._own_class(fake, module)  # not found in random: checked as the policy's
    assert not _sharing._own_class(collections.Counter, module)
    assert not _sharing._own_class(object, module)


# End to end: whatever the worker decides, an instance's replies are its seed's alone.

LIMITS = SandboxLimits(call_seconds=20.0)

# Each act reports what its state has seen, and a draw from the instance's stream.
TRICKS = {
    "constants only (shared)": """
        import random
        MOVES = ["ROCK", "PAPER", "SCISSORS"]
        class Agent:
            calls = 0
            def act(self, observation):
                self.calls += 1
                return "%s %d %r" % (random.choice(MOVES), self.calls, random.random())
    """,
    "module list": """
        import random
        HISTORY = []
        class Agent:
            def act(self, observation):
                HISTORY.append(1)
                return "%d %r" % (len(HISTORY), random.random())
    """,
    "class dict through self": """
        import random
        class Agent:
            TABLE = {}
            def act(self, observation):
                self.TABLE["n"] = self.TABLE.get("n", 0) + 1
                return "%d %r" % (self.TABLE["n"], random.random())
    """,
    "the class as self": """
        import random
        class Agent:
            count = 0
            def note(self):
                self.count = self.count + 1
            def act(self, observation):
                Agent.note(Agent)
                return "%d %r" % (Agent.count, random.random())
    """,
    "nonlocal closure": """
        import random
""" + COUNTER + """
        class Agent:
            def act(self, observation):
                return "%d %r" % (BUMP(), random.random())
    """,
    "import-time draw": """
        import random
        BIAS = random.random()
        class Agent:
            def act(self, observation):
                return repr(BIAS)  # drawn from the instance's own stream, as the module ran for it
    """,
}


def _replies(source: str, seeds: list[int], order: list[int]) -> dict[int, list]:
    worker = PolicyWorker(textwrap.dedent(source), "Agent", LIMITS)
    try:
        assert worker.start() is None
        assert worker.call([Call(i, "__init__", (s,)) for i, s in enumerate(seeds)]) == [None] * len(seeds)
        replies: dict[int, list] = {s: [] for s in seeds}
        for _ in range(4):
            for i in order:
                replies[seeds[i]] += worker.call([Call(i, "act", ({"opponent_action": "ROCK"},))])
    finally:
        worker.close()
    return replies


@pytest.mark.parametrize("case", TRICKS)
def test_an_instance_replies_the_same_alone_or_crowded(case):
    alone = _replies(TRICKS[case], [11], [0])
    crowded = _replies(TRICKS[case], [5, 11, 7], [2, 1, 0])
    assert crowded[11] == alone[11]
    assert len({tuple(r) for r in crowded.values()}) == 3  # the seeds reach the instances


def test_the_shared_case_is_shared():
    assert reason(TRICKS["constants only (shared)"]) is None
    assert reason(TRICKS["import-time draw"]) is None  # the worker copies it: its run drew
