"""Random streams of one policy instance, inside the sandboxed worker.

Issue 28's decision: a match's result is a function of its seed alone, not of the process,
the node, the chunk, the order, or what the worker played before. A worker plays many
matches at once (a runner's chunk), so everything random that a policy can reach without
asking the operating system for entropy is routed to the stream of the instance whose code
is running (one instance is one seat of one match):

* the ``random`` module's functions (``random.choice``, ``random.random``, ... and
  ``random.seed``): each instance has a ``random.Random`` of its own, seeded from its match
  seed; ``random.seed()`` without an argument returns to that seed;
* ``random.Random()`` without a seed: seeded from the instance's stream (the n-th such
  generator of an instance always gets the same seed);
* NumPy's legacy global functions (``np.random.choice``, ...), ``np.random.seed``,
  ``np.random.default_rng()`` and ``np.random.RandomState()`` without a seed: the same,
  once the policy has imported ``numpy.random`` (checked after its first run and after
  each batch of calls).

Not routed (documented in docs/sandbox.md): entropy asked of the system (``os.urandom``,
``random.SystemRandom``, ``secrets``), the clock, and a generator the policy seeds itself
with such a value. Our interpretation of "per-match streams" in the issue; the papers are
silent. A standalone module (stdlib only), imported by ``_worker.py`` before the policy runs.
"""

import random
import sys

_BaseRandom = random.Random


class InstanceRandom(_BaseRandom):
    """The ``random`` stream of one instance; ``seed()`` without an argument returns to the
    instance's own seed (not the system's entropy), and ``spawn()`` names the seed of the
    instance's next unseeded generator."""

    def __init__(self, origin):
        self._origin = origin
        self._spawned = 0
        self.numpy_state = None  # NumPy's legacy generator for this instance, made on first use
        super().__init__(origin)

    def seed(self, a=None, version=2):
        super().seed(self._origin if a is None else a, version)

    def drawn(self):
        """Where the stream stands (its state and the generators spawned so far)."""
        return self.getstate(), self._spawned

    def spawn(self):
        self._spawned += 1
        return "%s/%d" % (self._origin, self._spawned)

    def spawn_int(self, bits):
        return _BaseRandom(self.spawn()).getrandbits(bits)

    def numpy_seed(self):
        return _BaseRandom("numpy/%s" % self._origin).getrandbits(32)


class Streams:
    """Routes the module-level generators to the active instance's stream, ``current[0]``."""

    def __init__(self, worker_seed):
        self.worker_seed = worker_seed
        self.numpy_pending = True
        self.current = [InstanceRandom("worker/%d" % worker_seed)]
        _route_random(self.current)

    def new(self, instance, seed=None):
        """A fresh stream for ``instance`` (``seed`` None: derived from the worker's seed and
        the instance id, for callers that do not seed instances themselves)."""
        origin = "%d" % seed if seed is not None else "worker/%d/%d" % (self.worker_seed, instance)
        return InstanceRandom(origin)

    def route_numpy(self):
        """Once ``numpy.random`` is loaded, route its global generator too (idempotent)."""
        npr = sys.modules.get("numpy.random")
        if npr is None or not self.numpy_pending:
            return
        self.numpy_pending = False
        _route_numpy(npr, self.current)


def _route_random(current):
    shared = random._inst
    for name in dir(random):
        if getattr(getattr(random, name), "__self__", None) is shared:
            setattr(random, name, _forward(current, name))

    class Random(_BaseRandom):
        """``random.Random``; without a seed, seeded from the active instance's stream."""

        def seed(self, a=None, version=2):
            super().seed(current[0].spawn() if a is None else a, version)

    Random.__module__ = "random"
    random.Random = Random


def _forward(current, name, getattr=getattr):
    def forward(*args, **kwargs):
        return getattr(current[0], name)(*args, **kwargs)
    forward.__name__ = forward.__qualname__ = name
    return forward


def _route_numpy(npr, current):
    legacy = getattr(getattr(npr, "mtrand", None), "_rand", None)
    RandomState = npr.RandomState
    default_rng = npr.default_rng

    def state():
        stream = current[0]
        if stream.numpy_state is None:
            stream.numpy_state = RandomState(stream.numpy_seed())
        return stream.numpy_state

    def forward(name):
        def call(*args, **kwargs):
            return getattr(state(), name)(*args, **kwargs)
        call.__name__ = call.__qualname__ = name
        return call

    def seed(seed=None):
        state().seed(current[0].numpy_seed() if seed is None else seed)

    if legacy is not None:
        for name in dir(npr):
            if getattr(getattr(npr, name, None), "__self__", None) is legacy:
                setattr(npr, name, seed if name == "seed" else forward(name))

    def routed_default_rng(seed=None):
        return default_rng(current[0].spawn_int(128) if seed is None else seed)

    class SeededRandomState(RandomState):
        def __init__(self, seed=None):
            super().__init__(current[0].spawn_int(32) if seed is None else seed)

    routed_default_rng.__name__ = "default_rng"
    SeededRandomState.__name__ = SeededRandomState.__qualname__ = "RandomState"
    npr.default_rng = routed_default_rng
    npr.RandomState = SeededRandomState
