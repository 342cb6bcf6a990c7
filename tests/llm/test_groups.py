"""Which requests the embedded provider decodes together (its own logic; the decoding itself
is tested with the real model in ``test_embedded.py``)."""

from __future__ import annotations

from csro.llm.embedded import MAX_GROUP, _groups


def test_requests_with_one_prompt_are_decoded_together_up_to_the_group_limit():
    a, b = [1, 2, 3], [1, 2, 4]
    prompts = [a, b] + [a] * (MAX_GROUP + 1)
    everyone = list(range(len(prompts)))
    assert _groups(prompts, [10] * len(prompts), 4096) == [
        [0] + everyone[2:MAX_GROUP + 1], everyone[MAX_GROUP + 1:], [1]]


def test_a_group_holds_no_more_sequences_than_the_context_holds_at_their_largest_budget():
    a = [7] * 96
    assert _groups([a, a, a], [100, 2000, 100], 4096) == [[0, 1], [2]]  # (4096 - 96) // 2000 = 2
    assert _groups([a, a], [4050, 10], 4096) == [[0], [1]]  # alone: the provider's own error if it overflows
