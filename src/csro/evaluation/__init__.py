"""Match evaluation: the runner, the payoff table, population metrics, exact exploitability."""

from csro.evaluation.evaluate import Evaluation, evaluate, unique_names
from csro.evaluation.exploitability import (
    ExploitabilityError,
    ExploitabilityResult,
    exact_exploitability,
    exact_exploitability_profile,
)
from csro.evaluation.metrics import PopulationScore, population_score
from csro.evaluation.payoff_table import Z95, Cell, MatchResult, Mixture, PayoffTable, record
from csro.evaluation.policy_ref import PolicySpec, code_policy, resolve
from csro.evaluation.runner import plan_chunks, play_chunk, run_chunks
from csro.evaluation.tournament import Tournament, round_robin
from csro.evaluation.trace import Trace, play_traced

__all__ = [
    "Cell", "Evaluation", "ExploitabilityError", "ExploitabilityResult", "MatchResult", "Mixture",
    "PayoffTable", "PolicySpec", "PopulationScore", "Tournament", "Trace", "Z95", "code_policy", "evaluate",
    "exact_exploitability", "exact_exploitability_profile", "play_chunk", "plan_chunks", "play_traced",
    "population_score", "record", "resolve", "round_robin", "run_chunks", "unique_names",
]
