"""SEARCH/REPLACE edits: parsed and applied strictly, malformed ones rejected with a reason."""

import pytest

from csro.oracles.evolve import DiffError, Edit, apply_diff, format_edit, parse_diff

PARENT = "def f(x):\n    y = x + 1\n    return y\n\n\ndef g():\n    return 2\n"


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"


def test_one_block_replaces_exactly_its_lines():
    out = apply_diff(PARENT, "Change the increment:\n" + block("    y = x + 1", "    y = x + 2") + "\nDone.")
    assert out == PARENT.replace("x + 1", "x + 2")


def test_blocks_apply_in_order_each_to_the_previous_result():
    text = block("    y = x + 1", "    y = x * 3") + "\n" + block("    y = x * 3\n    return y", "    return x * 3")
    assert apply_diff(PARENT, text) == "def f(x):\n    return x * 3\n\n\ndef g():\n    return 2\n"


def test_a_block_can_delete_lines():
    assert "def g" not in apply_diff(PARENT, block("def g():\n    return 2", ""))


def test_format_round_trips():
    edit = Edit("    return 2", "    return 3")
    assert parse_diff(format_edit(edit)) == [edit]


@pytest.mark.parametrize("text, message", [
    ("no edit here, just prose", "no SEARCH/REPLACE block"),
    ("<<<<<<< SEARCH\n    y = x + 1\n=======\n    y = 0\n", "not closed"),
    ("<<<<<<< SEARCH\n    y = x + 1\n>>>>>>> REPLACE", "before the ======= divider"),
    (">>>>>>> REPLACE", "without a SEARCH block"),
    ("<<<<<<< SEARCH\na\n<<<<<<< SEARCH\n", "opened twice"),
    ("<<<<<<< SEARCH\na\n=======\nb\n<<<<<<< SEARCH\n", "inside a REPLACE section"),
])
def test_malformed_diffs_are_rejected_with_a_reason(text, message):
    with pytest.raises(DiffError, match=message):
        apply_diff(PARENT, text)


def test_search_text_must_match_exactly_not_modulo_whitespace():
    with pytest.raises(DiffError, match="not in the parent"):
        apply_diff(PARENT, block("  y = x + 1", "  y = 0"))  # wrong indentation
    with pytest.raises(DiffError, match="not in the parent"):
        apply_diff(PARENT, block("    y = x+1", "    y = 0"))


def test_ambiguous_search_text_is_rejected():
    with pytest.raises(DiffError, match="occurs 2 times"):
        apply_diff(PARENT + "def h():\n    return 2\n", block("    return 2", "    return 3"))


def test_empty_search_is_rejected():
    with pytest.raises(DiffError, match="empty"):
        apply_diff(PARENT, "<<<<<<< SEARCH\n=======\nx = 1\n>>>>>>> REPLACE")


def test_a_failing_later_block_fails_the_whole_diff():
    text = block("    y = x + 1", "    y = 5") + "\n" + block("nowhere", "x")
    with pytest.raises(DiffError, match="block 2"):
        apply_diff(PARENT, text)
