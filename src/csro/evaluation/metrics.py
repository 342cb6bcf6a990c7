"""Population metrics of the population-based RRPS benchmark (Lanctot et al. 2023,
arXiv 2303.03196), as used by CSRO (Hennes et al., arXiv 2603.10098):

    PopReturn(pi) = mean over population members o of pi's mean return against o
    PopExpl(pi)   = max over members o of o's mean return against pi   (the worst case)
    AggScore(pi)  = PopReturn(pi) - PopExpl(pi)

``pi`` may be a single policy or a Mixture (its value is the sigma-weighted expectation).

Confidence intervals (95%, normal approximation, cells independent):
- PopReturn: from the standard errors of the per-opponent means.
- PopExpl: the interval of the arg-max member's mean. A max over noisy means is biased
  *upward* — with few matches per cell the worst-case member looks better than it is —
  and its interval ignores that selection, so it is optimistic about precision. We report
  the matches per cell next to it so a reader can judge; more matches shrink the bias.
- AggScore: sqrt(se_ret^2 + se_expl^2), which ignores their covariance (conservative in
  zero-sum games, where the two are negatively correlated through the arg-max cell).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

from csro.evaluation.payoff_table import Z95, PayoffTable, Side, _as_mixture


@dataclasses.dataclass(frozen=True)
class PopulationScore:
    """The three metrics of one policy or mixture, with 95% half-widths and match counts."""

    policy: str
    pop_return: float
    pop_expl: float
    agg_score: float
    ci95_return: float
    ci95_expl: float
    ci95_agg: float
    worst_opponent: str
    matches: int
    min_matches_per_cell: int
    per_opponent: dict[str, float]

    def to_dict(self) -> dict:
        return {
            "policy": self.policy,
            "pop_return": self.pop_return,
            "pop_expl": self.pop_expl,
            "agg_score": self.agg_score,
            "ci95": {"pop_return": self.ci95_return, "pop_expl": self.ci95_expl, "agg_score": self.ci95_agg},
            "worst_opponent": self.worst_opponent,
            "matches": self.matches,
            "matches_per_cell": self.min_matches_per_cell,
            "per_opponent": self.per_opponent,
        }


def population_score(table: PayoffTable, policy: Side, population: Sequence[str], name: str | None = None) -> PopulationScore:
    """PopReturn, PopExpl and AggScore of ``policy`` against ``population``."""
    if not population:
        raise ValueError("the evaluation population is empty")
    mix = _as_mixture(policy)
    per_opponent = {o: table.value(mix, o) for o in population}
    pop_return = sum(per_opponent.values()) / len(population)
    se_return = math.sqrt(sum(table.sem(mix, o) ** 2 for o in population)) / len(population)
    exploit = {o: table.value(o, mix) for o in population}
    worst = max(population, key=lambda o: exploit[o])
    pop_expl = exploit[worst]
    se_expl = table.sem(worst, mix)
    counts = [table.count(p, o) for p in mix.weights for o in population]
    label = name if name is not None else (policy if isinstance(policy, str) else "mixture")
    return PopulationScore(
        policy=label,
        pop_return=pop_return,
        pop_expl=pop_expl,
        agg_score=pop_return - pop_expl,
        ci95_return=Z95 * se_return,
        ci95_expl=Z95 * se_expl,
        ci95_agg=Z95 * math.hypot(se_return, se_expl),
        worst_opponent=worst,
        matches=sum(counts),
        min_matches_per_cell=min(counts),
        per_opponent=per_opponent,
    )
