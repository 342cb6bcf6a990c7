"""The program database: archives per island, sampling, migration, re-scoring when sigma changes."""

import random

import pytest

from csro.oracles.evolve import FULL, Program, ProgramDatabase, length_bin


def weighted(sigma):
    def fitness(scores):
        if any(k not in scores for k in sigma):
            return None
        return sum(w * scores[k] for k, w in sigma.items())
    return fitness


def by_tag(p):
    return (p.info.get("cell", 0),)


def prog(pid, island, scores, cell=0, status="ok", source=None, stage=FULL):
    return Program(id=pid, iteration=1, generation=0, island=island, source=source or f"# {pid}\n",
                   status=status, stage=stage, scores=dict(scores), info={"cell": cell})


@pytest.fixture
def db():
    d = ProgramDatabase(2, weighted({"a": 1.0}), by_tag)
    d.add(prog("x", 0, {"a": 1.0}, cell=0))
    d.add(prog("y", 0, {"a": 3.0}, cell=0))
    d.add(prog("z", 0, {"a": 2.0}, cell=1))
    d.add(prog("w", 1, {"a": 5.0}, cell=0))
    d.add(prog("bad", 0, {}, status="invalid", stage=0, source="oops"))
    return d


def test_archive_keeps_the_fittest_per_cell_and_ignores_unevaluated(db):
    archive = db.archive(0)
    assert {cell: p.id for cell, p in archive.items()} == {(0,): "y", (1,): "z"}
    assert [p.id for p in db.elites(0)] == ["y", "z"]
    assert [p.id for p in db.elites()] == ["w", "y", "z"]
    assert db.fitness("bad") is None
    assert db.best().id == "w"
    assert db.best(exclude=lambda p: p.id == "w").id == "y"


def test_duplicate_ids_and_bad_islands_are_refused(db):
    with pytest.raises(ValueError, match="already"):
        db.add(prog("x", 0, {"a": 0.0}))
    with pytest.raises(ValueError, match="island"):
        db.add(prog("q", 5, {"a": 0.0}))


def test_parent_sampling_exploits_with_a_tournament_and_explores_uniformly(db):
    rng = random.Random(0)
    greedy = [db.sample_parent(0, rng, exploit=1.0, tournament=8).id for _ in range(50)]
    assert set(greedy) == {"y"}  # 8 entrants over 2 elites: the fitter one wins (almost) always
    rng = random.Random(1)
    explore = [db.sample_parent(0, rng, exploit=0.0).id for _ in range(200)]
    assert set(explore) == {"y", "z"} and 60 < explore.count("z") < 140
    assert db.sample_parent(1, rng, 0.5).id == "w"
    empty = ProgramDatabase(1, weighted({"a": 1.0}), by_tag)
    assert empty.sample_parent(0, rng, 0.5) is None


def test_inspirations_exclude_the_parent_and_start_with_the_island_best(db):
    rng = random.Random(0)
    parent = db.programs["z"]
    chosen = db.sample_inspirations(0, parent, rng, 2)
    assert chosen[0].id == "y" and "z" not in [p.id for p in chosen]
    assert {p.id for p in chosen} == {"y", "w"}
    assert db.sample_inspirations(0, parent, rng, 0) == []


def test_migration_copies_each_island_best_to_the_next_island(db):
    migrants = db.migrants(iteration=1, generation=3)
    assert {(m.parent, m.island) for m in migrants} == {("y", 1), ("w", 0)}
    for m in migrants:
        assert m.mutation == "migrant" and m.scores == db.programs[m.parent].scores
        db.add(m)
    assert db.archive(1)[(0,)].id == "w"  # y's copy (3.0) does not beat w (5.0) in its cell
    assert db.migrants(iteration=1, generation=4) == []  # already there: no second copy
    assert ProgramDatabase(1, weighted({}), by_tag).migrants(1, 0) == []


def test_rescoring_uses_the_stored_payoff_vectors_only(db):
    # sigma moves to a new opponent "b": nobody has a cell against it yet
    db.rescore(weighted({"a": 0.5, "b": 0.5}))
    assert db.elites() == [] and db.best() is None
    missing = db.missing(["a", "b"], db.programs.values())
    assert missing["y"] == ["b"] and missing["bad"] == ["a", "b"]
    db.update_scores("x", {"b": 10.0})
    assert db.fitness("x") == pytest.approx(5.5)
    assert db.best().id == "x"
    # back to the old sigma: the old ranking returns without any new cell
    assert db.rescore(weighted({"a": 1.0})) == 5
    assert db.best().id == "w"


def test_length_bins():
    assert length_bin("a\n\nb\n", [3, 10]) == 0
    assert length_bin("\n".join("x" * 5 for _ in range(5)), [3, 10]) == 1
    assert length_bin("\n".join("x" for _ in range(12)), [3, 10]) == 2
    assert length_bin(None, [3]) == 0
