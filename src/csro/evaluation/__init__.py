"""Match evaluation: the runner, the payoff table, population metrics, exact exploitability.

Each name is imported from its module when first used (``csro._lazy``): a payoff table does
not need the game engine.
"""

from csro._lazy import lazy_package

_EXPORTS = {
    **dict.fromkeys(("Evaluation", "evaluate", "unique_names"), "csro.evaluation.evaluate"),
    **dict.fromkeys(("ExploitabilityError", "ExploitabilityResult", "exact_exploitability",
                     "exact_exploitability_profile"), "csro.evaluation.exploitability"),
    **dict.fromkeys(("PopulationScore", "population_score"), "csro.evaluation.metrics"),
    **dict.fromkeys(("Z95", "Cell", "MatchResult", "Mixture", "PayoffTable", "record"), "csro.evaluation.payoff_table"),
    **dict.fromkeys(("PolicySpec", "code_policy", "resolve"), "csro.evaluation.policy_ref"),
    **dict.fromkeys(("plan_chunks", "play_chunk", "run_chunks"), "csro.evaluation.runner"),
    **dict.fromkeys(("Tournament", "round_robin"), "csro.evaluation.tournament"),
    **dict.fromkeys(("Trace", "play_traced"), "csro.evaluation.trace"),
}
__all__ = lazy_package(__name__, _EXPORTS)
