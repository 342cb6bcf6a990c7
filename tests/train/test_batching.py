"""Event-atomic batching: property tests (hypothesis) and a hand-made case."""

from hypothesis import given, settings
from hypothesis import strategies as st

from csro.train.batching import event_minibatches, is_complete
from csro.train.events import Event, Member


def _member(event_id: str, index: int, k: int, state: str = "s", version: int = 0) -> Member:
    return Member(event_id=event_id, state_id=state, role="solver", member_index=index, expected_k=k,
                  policy_version=version, prompt_ids=(1, 2), completion_ids=(3,), completion_mask=(1,),
                  behaviour_logprobs=(-1.0,))


@st.composite
def events(draw):
    out = []
    for e in range(draw(st.integers(0, 12))):
        k = draw(st.integers(1, 5))
        present = list(range(k))
        fault = draw(st.sampled_from(["none", "none", "missing", "duplicate", "version"]))
        if fault == "missing":
            present.remove(draw(st.sampled_from(present)))
        members = [_member(f"e{e}", j, k) for j in present]
        if fault == "duplicate":
            members.append(_member(f"e{e}", draw(st.sampled_from(present)), k))
        if fault == "version" and k > 1:
            members[-1] = _member(f"e{e}", present[-1], k, version=1)
        out.append(Event(f"e{e}", "g", "solver", tuple(members), 0.0))
    return out


@settings(max_examples=200, deadline=None)
@given(events(), st.integers(1, 8))
def test_batching_invariants(evs, max_rows):
    batches = event_minibatches(evs, max_rows)
    complete = [e for e in evs if is_complete(e)]
    placed = [e for mb in batches.minibatches for e in mb]
    # every complete event exactly once, whole, in order; no incomplete event anywhere
    assert [e.event_id for e in placed] == [e.event_id for e in complete]
    assert all(len(e.members) == e.k for e in placed)
    assert batches.dropped == len(evs) - len(complete)
    assert set(batches.dropped_ids) == {e.event_id for e in evs} - {e.event_id for e in complete}
    for mb in batches.minibatches:
        rows = sum(len(e.members) for e in mb)
        assert rows <= max_rows or len(mb) == 1  # only a single oversized event exceeds the cap
        assert mb  # no empty mini-batch


def test_missing_member_is_dropped_not_shrunk():
    whole = Event("a", "g", "solver", tuple(_member("a", j, 3) for j in range(3)), 1.0)
    short = Event("b", "g", "solver", (_member("b", 0, 3), _member("b", 2, 3)), 1.0)
    batches = event_minibatches([whole, short], max_rows=2)
    assert batches.dropped == 1 and batches.dropped_ids == ("b",)
    assert [[e.event_id for e in mb] for mb in batches.minibatches] == [["a"]]
    assert len(batches.minibatches[0][0].members) == 3  # the oversized event is kept whole
