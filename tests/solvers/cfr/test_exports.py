"""The public surface of ``csro.solvers.cfr`` (a change here is an API change)."""

import csro.solvers.cfr as cfr


def test_exported_members():
    assert sorted(cfr.__all__) == sorted([
        "ALGORITHMS", "CFRSolver", "GameTree", "InfosetBlock", "PolicyAccumulator",
        "PolicyFromRegretAccumulator", "RegretAccumulator", "SolveConfig", "SolveResult",
        "TreePolicy", "Variant", "build_tree", "exploitability", "load_game", "load_tree",
        "log_checkpoints", "make_variant", "nash_conv", "normalize_rows", "openspiel_nash_conv",
        "policy_table", "regret_matching", "solve",
    ])
    for name in cfr.__all__:
        assert hasattr(cfr, name), name
