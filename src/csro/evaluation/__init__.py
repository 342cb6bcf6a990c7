"""Match evaluation: the runner, the payoff table, population metrics, exact exploitability."""

from csro.evaluation.evaluate import Evaluation, evaluate, unique_names
from csro.evaluation.exploitability import ExploitabilityError, ExploitabilityResult, exact_exploitability
from csro.evaluation.metrics import PopulationScore, population_score
from csro.evaluation.payoff_table import Z95, Cell, Mixture, PayoffTable
from csro.evaluation.policy_ref import PolicySpec, code_policy, resolve
from csro.evaluation.runner import MatchResult, plan_chunks, play_chunk, record, run_chunks
from csro.evaluation.trace import Trace, play_traced

__all__ = [
    "Cell", "Evaluation", "ExploitabilityError", "ExploitabilityResult", "MatchResult", "Mixture",
    "PayoffTable", "PolicySpec", "PopulationScore", "Trace", "code_policy", "evaluate", "play_traced",
    "exact_exploitability", "play_chunk", "plan_chunks", "population_score", "record", "resolve",
    "run_chunks", "unique_names", "Z95",
]
