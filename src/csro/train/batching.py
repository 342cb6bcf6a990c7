"""Event-atomic batching (SRPO, Yang et al. arXiv 2609.08452, "event-atomic batching").

Every row of an event lands in the same mini-batch, so the set ratio ``rho_e`` is always
computed over the whole active set. An event is *complete* when it holds exactly its
expected ``K_e`` members with indices ``0..K_e-1`` that agree on ``K_e``, its state and
its policy version; an incomplete event (a member lost to a failed call, a duplicate, a
disagreeing row) is dropped and counted, never shrunk to the members that are there.

Packing is greedy in the given order (shuffle with a seeded generator before calling): a
mini-batch takes whole events until the next would exceed ``max_rows``; an event larger
than ``max_rows`` on its own forms a mini-batch by itself rather than being split.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from csro.train.events import Event


@dataclasses.dataclass(frozen=True)
class Batches:
    """The mini-batches of complete events and how many events were dropped."""

    minibatches: tuple[tuple[Event, ...], ...]
    dropped: int
    dropped_ids: tuple[str, ...] = ()


def is_complete(event: Event) -> bool:
    """All ``K_e`` members present once each, agreeing on ``K_e``, state and policy version."""
    members = event.members
    if not members:
        return False
    k = members[0].expected_k
    return (len(members) == k
            and sorted(m.member_index for m in members) == list(range(k))
            and all(m.expected_k == k and m.event_id == event.event_id for m in members)
            and len({m.state_id for m in members}) == 1
            and len({m.policy_version for m in members}) == 1)


def event_minibatches(events: Sequence[Event], max_rows: int) -> Batches:
    """Drop incomplete events, then pack the rest into mini-batches of whole events."""
    if max_rows < 1:
        raise ValueError(f"max_rows must be at least 1, got {max_rows}")
    complete = [e for e in events if is_complete(e)]
    dropped = tuple(e.event_id for e in events if not is_complete(e))
    batches: list[tuple[Event, ...]] = []
    current: list[Event] = []
    rows = 0
    for event in complete:
        n = len(event.members)
        if current and rows + n > max_rows:
            batches.append(tuple(current))
            current, rows = [], 0
        current.append(event)
        rows += n
    if current:
        batches.append(tuple(current))
    return Batches(tuple(batches), len(dropped), dropped)
