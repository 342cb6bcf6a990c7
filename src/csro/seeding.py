"""Seeds derived from the run seed and names, independent of scheduling.

Every random choice of a run (a match's chance events, a request's sampling seed, an
evolutionary step's parent draw) takes its seed from ``derive_seed(run seed, *names)``, so
the same configuration gives the same run whatever order concurrent work finishes in
(a design principle of the project; the papers are silent on reproducibility).
"""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from the run seed and names/indices, independent of scheduling."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
