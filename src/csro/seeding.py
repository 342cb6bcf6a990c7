"""Seeds derived from the run seed and names, independent of scheduling; match seeds keyed
with a secret of the run.

Every random choice of a run (a match's chance events, a request's sampling seed, an
evolutionary step's parent draw) takes its seed from ``derive_seed(root, *names)``, so the
same configuration gives the same run whatever order concurrent work finishes in (a design
principle of the project; the papers are silent on reproducibility).

``derive_seed`` is public: whoever knows its parts computes the seed. That is fine for what no
policy can exploit (an LLM request's sampling seed, an evolutionary parent draw, a training
step), but not for matches (issue 37): a policy that guessed the run seed, the names and the
match index recomputed its opponent's seat seed and predicted every throw of
``builtin:random``, or named its opponent by the seed it was given. So the seeds of matches
(their chance events, every seat's seed: a built-in bot's generator or a code policy's
instance) derive from a *match root*, ``match_root(run seed, secret)``: a run draws a secret
when it starts (``new_secret``, 256 bits from ``secrets``, kept in its run store so that a
resumed run and a replay play the same matches), and the root is HMAC-SHA256(secret, run seed)
as a 256-bit integer. ``derive_seed(root, *names)`` is then SHA-256 over a secret 256-bit
prefix, truncated to 63 bits: a keyed derivation (no length extension reaches a truncated
digest) that no policy can compute without the secret, and a seat's seed
``derive_seed(match seed, seat)`` reveals neither the match seed nor another seat's seed
(a preimage of SHA-256). A command without a run directory (``csro eval``, ``csro play``) draws
its seed (``draw_seed``: 63 bits from ``secrets``) unless the user fixes one, and says which it
drew; a fixed ``--seed S`` is reproducible and therefore public, the user's choice.

A run directory made before the secret (no secret in its store) keeps the old, public
derivation (the root is the run seed itself), so it resumes and replays exactly as before.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SECRET_BYTES = 32


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from a root (the run seed, a match root or a match seed) and
    names/indices, independent of scheduling."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def new_secret() -> str:
    """A run's secret, hex, drawn from the operating system's entropy."""
    return secrets.token_hex(SECRET_BYTES)


def match_root(seed: int, secret: str | None) -> int:
    """The root every match seed of a run derives from: HMAC-SHA256(secret, seed) as a 256-bit
    integer; the run seed itself for a run without a secret (made before issue 37)."""
    if secret is None:
        return seed
    return int.from_bytes(hmac.new(bytes.fromhex(secret), str(seed).encode(), hashlib.sha256).digest(), "big")


def draw_seed() -> int:
    """A seed for matches no run directory keeps (``csro eval``/``csro play`` without
    ``--seed``): 63 bits from the operating system's entropy, as hard to guess as a match seed."""
    return secrets.randbits(63)
