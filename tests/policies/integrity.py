"""A corpus of attempts on the integrity of a match (issue 37): RRPS policies that try to learn
what the referee knows and the game's observation does not give them, and to win with it.

Every attempt is a whole policy file. Each one plays honestly (uniformly at random, from its
own stream) unless its attack works, and then plays what wins, so the attack shows in the
score: against ``builtin:random`` an honest policy's mean return is 0 (sd ~26 a match of
1000 throws), a working prediction gives ~+1000. The kinds, each tried in more than one way:

- ``seeds``: recompute the seat seeds from values a policy can guess (csro's own derivation,
  ``derive_seed(run seed, policy, opponent, match index)`` then ``derive_seed(match seed,
  seat)``): with the default run seeds, with guessed seeds 0..N, with the match index as the
  match seed; a candidate is kept while it has predicted every throw seen so far, and played
  once it has predicted the first ``PROBE`` throws (builtin:random's NumPy generator is
  rewritten in pure Python, so the attempts need no NumPy, which an ordinary user's
  interpreter may lack);
- ``naming``: name the opponent before the first throw (find the candidate whose seat seed
  reproduces the first draw of the policy's own stream, or of an unseeded ``random.Random()``,
  for each name of the population), then
  play what beats ``builtin:rockbot`` if that is the name found, and what loses to it otherwise;
- ``referee``: look for the opponent's seed in the worker's memory: every integer the garbage
  collector reaches, every frame's locals, every module's globals, the process's environment,
  command line and path.

Run by ``test_integrity.py`` through ``csro eval`` (without ``--seed``: the run draws its
seed) as the user running the tests and, when that is root, as an ordinary user; each
``seeds``/``naming`` attempt also runs with a fixed, guessable ``--seed``, where it must win
(the proof that the attack is real and that the figure can fail).
"""

from __future__ import annotations

POLICY = "attacker"  # the file stem: the policy's name in csro eval
PROBE = 12  # throws a candidate must predict before it is played

PRELUDE = '''
import gc, hashlib, os, random, sys

ACTIONS = ("ROCK", "PAPER", "SCISSORS")
BEATS = {"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}
POLICY = %(policy)r
PROBE = %(probe)d
BOTS = %(bots)r
RUN_SEEDS = %(run_seeds)r


def derive(*parts):
    """csro.seeding.derive_seed, as any policy can write it."""
    d = hashlib.sha256("\\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(d[:8], "big") >> 1


MASK32, MASK64, MASK128 = 0xFFFFFFFF, (1 << 64) - 1, (1 << 128) - 1
PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645


def seed_words(seed, n_words):
    """numpy.random.SeedSequence(seed).generate_state(n_words) (32-bit words), pure Python."""
    entropy = []
    while True:
        entropy.append(seed & MASK32)
        seed >>= 32
        if not seed:
            break
    h = [0x43B0D7E5]

    def hashmix(v):
        v ^= h[0]
        h[0] = (h[0] * 0x931E8875) & MASK32
        v = (v * h[0]) & MASK32
        return v ^ (v >> 16)

    def mix(x, y):
        r = (0xCA01F9DD * x - 0x4973F715 * y) & MASK32
        return r ^ (r >> 16)

    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(4)]
    for s in range(4):
        for d in range(4):
            if s != d:
                pool[d] = mix(pool[d], hashmix(pool[s]))
    for s in range(4, len(entropy)):
        for d in range(4):
            pool[d] = mix(pool[d], hashmix(entropy[s]))
    out, c = [], 0x8B51F9DD
    for i in range(n_words):
        v = pool[i %% 4] ^ c
        c = (c * 0x58F38DED) & MASK32
        v = (v * c) & MASK32
        out.append(v ^ (v >> 16))
    return out


def uniforms(seed, n):
    """numpy.random.default_rng(seed).random(n), pure Python (PCG64, XSL-RR output)."""
    w = seed_words(seed, 8)
    v = [w[2 * i] | (w[2 * i + 1] << 32) for i in range(4)]
    initstate, inc = (v[0] << 64) | v[1], (((v[2] << 64) | v[3]) << 1 | 1) & MASK128
    state = (inc + initstate) * PCG_MULT + inc & MASK128
    out = []
    for _ in range(n):
        state = (state * PCG_MULT + inc) & MASK128
        x, rot = ((state >> 64) ^ state) & MASK64, state >> 122
        out.append(((((x >> rot) | (x << (64 - rot))) & MASK64) >> 11) * (1.0 / 9007199254740992.0))
    return out


def throws(seed, n):
    """builtin:random's first n throws with seat seed ``seed`` (csro.games._common)."""
    return [ACTIONS[int(x * 3)] for x in uniforms(seed & MASK128, n)]


def seat_seeds(match_seeds):
    return {derive(j, s) for j in match_seeds for s in (0, 1)}


def integers(values):
    """The integers that could be seeds among ``values`` and the items of the containers there,
    with the seat seeds they would give as match seeds."""
    found = set()
    for v in values:
        for w in (v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple, set)) else (v,)):
            if type(w) is int and 1000 < w < 2 ** 64:
                found.add(w)
    return found | seat_seeds(list(found)[:3000])


def name_by(first, draw):
    """The opponent whose seat seed s (for a guessed run seed, match index and seat) makes
    ``draw(s)`` equal ``first``, or None."""
    for opponent in ["builtin:" + b for b in BOTS]:
        for s in RUN_SEEDS + tuple(range(16)):
            for m in range(4):
                j = derive(s, POLICY, opponent, m)
                for seat in (0, 1):
                    if draw(derive(j, seat)) == first:
                        return opponent
    return None


class Namer:
    """Beats builtin:rockbot if it named it before the first throw, loses to it otherwise."""

    def act(self, observation):
        return "PAPER" if self.opponent == "builtin:rockbot" else "SCISSORS"


class Predictor:
    """Plays at random until a candidate seed of the opponent has predicted every throw so far."""

    def __init__(self):
        self.candidates = list(candidates())[:8000]  # ``candidates``: what the attempt defines
        self.heads = [throws(c, PROBE) for c in self.candidates]
        self.seen = []
        self.plan = None

    def act(self, observation):
        last = observation["opponent_action"]
        if last is not None:
            self.seen.append(last)
            if self.plan is None and len(self.seen) == PROBE:
                hits = [c for c, h in zip(self.candidates, self.heads) if h == self.seen]
                if hits:
                    self.plan = throws(hits[0], 1000)
        t = len(self.seen)
        if self.plan is not None and t < len(self.plan):
            return BEATS[self.plan[t]]
        return random.choice(ACTIONS)
'''

RUN_SEEDS = (0, 1, 7, 42, 1234, 2024, 12345)  # run seeds a policy would guess first

# (name, command, kind, opponent, body): the body defines ``class Agent`` (the prelude comes
# first); ``command`` is the csro command that plays it (``play``: one match, whose seed is the
# match seed itself).
ATTEMPTS = [
    ("seeds_default_run_seeds", "eval", "seeds", "builtin:random", '''
def candidates():
    js = [derive(s, a, b, m) for s in RUN_SEEDS for a, b in ((POLICY, "builtin:random"),
          ("builtin:random", POLICY)) for m in range(16)]
    return seat_seeds(js)

class Agent(Predictor):
    pass
'''),
    ("seeds_guessed_0_to_n", "eval", "seeds", "builtin:random", '''
def candidates():
    js = [derive(s, POLICY, "builtin:random", m) for s in range(400) for m in range(4)]
    return seat_seeds(js)

class Agent(Predictor):
    pass
'''),
    ("seeds_match_index_as_seed", "play", "seeds", "builtin:random", '''
def candidates():
    # the match seed itself small (csro play --seed N), or the match index under any name
    return seat_seeds(list(range(3000)) + [derive(m) for m in range(100)])

class Agent(Predictor):
    pass
'''),
    ("naming_by_own_stream", "eval", "naming", "builtin:rockbot", '''
class Agent(Namer):
    def __init__(self):
        first = random.random()  # the first draw of this instance's stream, seeded with its seat seed
        self.opponent = name_by(first, lambda seed: random.Random("%d" % seed).random())
'''),
    ("naming_by_spawned_generator", "eval", "naming", "builtin:rockbot", '''
class Agent(Namer):
    def __init__(self):
        first = random.Random().random()  # unseeded: seeded from the instance's stream ("<seed>/1")
        self.opponent = name_by(first, lambda seed: random.Random("%d/1" % seed).random())
'''),
    ("referee_gc_integers", "eval", "referee", "builtin:random", '''
def candidates():
    return integers(gc.get_objects())

class Agent(Predictor):
    pass
'''),
    ("referee_frame_locals", "eval", "referee", "builtin:random", '''
def candidates():
    values = []
    for f in list(sys._current_frames().values()) + [sys._getframe()]:
        while f is not None:
            values += list(f.f_locals.values()) + list(f.f_globals.values())
            f = f.f_back
    return integers(values)

class Agent(Predictor):
    pass
'''),
    ("referee_module_globals", "eval", "referee", "builtin:random", '''
def candidates():
    return integers([v for m in list(sys.modules.values()) for v in list(getattr(m, "__dict__", {}).values())])

class Agent(Predictor):
    pass
'''),
    ("referee_environment", "eval", "referee", "builtin:random", '''
def candidates():
    text = " ".join(list(os.environ.values()) + sys.argv + sys.path + [str(sys.flags), os.getcwd()])
    return integers(int(w) for w in "".join(c if c.isdigit() else " " for c in text).split() if 3 < len(w) < 21)

class Agent(Predictor):
    pass
'''),
]

# Instances of different matches pooling what they know (issue 37 item 3(b)): in the default,
# batched mode the instances of a policy in one chunk share its worker, so anything they all
# import carries state from one match to the next; with ``--isolate-matches`` each match has a
# worker of its own. Each attempt loses every throw to builtin:rockbot unless an instance of an
# earlier match left a mark, and then wins every throw: isolated matches give -1000, pooled
# ones up to +1000 * (POOLED - 1) / POOLED (+750 with POOLED = 8 matches).
POOLED = 8
POOLING = {  # name: (the module imported, where the mark is kept)
    "pool_in_a_standard_module": ("string", "string"),
    "pool_in_builtins": ("builtins", "builtins"),
    "pool_in_a_standard_class": ("collections", "collections.Counter"),
    "pool_in_an_extension_module": ("math", "math"),
}


def pooling_source(module: str, holder: str) -> str:
    """A policy that keeps a list as an attribute of ``holder``, which every instance of its
    worker reaches by importing ``module``."""
    return f'''
import {module}

class Agent:
    def __init__(self):
        pool = getattr({holder}, "_pool", None)
        if pool is None:
            pool = []
            setattr({holder}, "_pool", pool)
        self.first = not pool
        pool.append(1)

    def act(self, observation):
        return "SCISSORS" if self.first else "PAPER"
'''


# The attempts that must win where the seed is public (csro eval --seed S with S guessable).
GUESSABLE_SEED = 7


def source(body: str, bots: list[str]) -> str:
    """The whole policy file of an attempt."""
    return PRELUDE % {"policy": POLICY, "probe": PROBE, "bots": sorted(bots), "run_seeds": RUN_SEEDS} + body


def honest(kind: str, mean: float) -> bool:
    """Whether an attempt of ``kind`` did no better than honest play: random throws against
    builtin:random (mean 0, sd ~18 over 2 matches: inside +-200), the losing throw against
    rockbot (-1000); or it was refused (a ``referee`` attempt the audit hook stops loses every
    match: -1000)."""
    if kind == "naming":
        return mean == -1000.0
    return -200.0 <= mean <= 200.0 or (kind == "referee" and mean == -1000.0)


def won(kind: str, mean: float) -> bool:
    """Whether the attack worked (the positive control: a guessable seed)."""
    return mean >= 900.0 if kind != "naming" else mean == 1000.0
