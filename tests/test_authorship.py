"""Authorship (issue 26): who wrote a member, as stored and as derived for a run stored before
it was recorded; sigma's weight on the model's programs."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from csro.authorship import AUTHORS, by_author_text, model_weight, stored_author, weight_by_author
from csro.store import PolicyRecord, RunStore


@pytest.mark.parametrize("oracle, ref, keys, author", [
    ("initial", "builtin:random", (), "builtin"),
    ("initial", None, (), "file"),
    ("evolve", None, (), "example"),                                   # evolve's seed (no call wrote it)
    ("evolve", None, ("1/evolve-0-1/2",), "model"),
    ("zero_shot", None, ("0/describe-p1/0", "2/propose/1", "2/repair-0-0/1"), "model"),
    ("zero_shot", None, ("2/grammar-0/0", "2/repair-0-0/0"), "grammar"),  # a repaired fallback is still one
    ("linear_refinement", None, ("2/grammar-0/0", "2/refine-1/0"), "model"),  # refined by the model
    ("reflect", None, ("2/seat1-grammar-0/0",), "grammar"),             # a player's scope before the step
    ("zero_shot", None, (), "unknown"),
])
def test_a_member_stored_before_authorship_reads_as_derived(oracle, ref, keys, author):
    assert stored_author(oracle, ref, keys) == author


def test_model_weight_counts_model_and_grammar_members():
    assert model_weight(["builtin", "example", "model", "grammar"], [0.1, 0.2, 0.3, 0.4]) == pytest.approx(0.7)
    assert model_weight(["builtin", "example"], [0.5, 0.5]) == 0.0


def test_sigma_is_split_per_kind_of_author_not_folded_issue_40():
    weights = weight_by_author(["builtin", "example", "model", "grammar", "frame", "grammar", "alien"],
                               [0.05, 0.1, 0.15, 0.2, 0.25, 0.2, 0.05])
    assert list(weights) == list(AUTHORS)  # every kind, in one order, 0.0 where none
    assert weights == pytest.approx({"model": 0.15, "grammar": 0.4, "frame": 0.25, "example": 0.1,
                                     "builtin": 0.05, "file": 0.0, "unknown": 0.05})
    assert by_author_text(weights) == ("model 0.15, grammar 0.40, frame 0.25, example 0.10, builtin 0.05, "
                                       "unknown 0.05")
    assert by_author_text(weight_by_author([], [])) == "-"


def test_an_older_store_gains_the_column_and_derives_its_rows(tmp_path):
    source = "class Agent: pass"
    sha = hashlib.sha256(source.encode()).hexdigest()
    with RunStore.create(tmp_path / "run", {"x": 1}) as store:
        store.add_policy(PolicyRecord("p0", 0, 0, "initial", None, "builtin:random", None, None, author="builtin"))
        store.add_policy(PolicyRecord("p1", 0, 1, "evolve", source, None, sha, None, author="example"))
        store.add_policy(PolicyRecord("p2", 0, 2, "zero_shot", source + " ", None, "x", None, ("2/grammar-0/0",),
                                      author="grammar"))
        stored = store.policies()
    assert [p.author for p in stored] == ["builtin", "example", "grammar"]
    with sqlite3.connect(tmp_path / "run" / "run.db") as conn:  # as a store made before the column
        conn.execute("ALTER TABLE policies DROP COLUMN author")
    with RunStore.open(tmp_path / "run") as store:
        assert store.policies() == stored
        store.add_policy(PolicyRecord("p3", 0, 3, "zero_shot", "y", None, "y", None, ("3/propose/0",), author="model"))
        assert [p.author for p in store.policies()] == ["builtin", "example", "grammar", "model"]
