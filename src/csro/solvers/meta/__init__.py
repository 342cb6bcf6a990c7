"""Meta-strategy solvers for PSRO / CSRO empirical games.

One interface: ``solver.solve(payoffs) -> [sigma_0, ..., sigma_{N-1}]``, each sigma
non-negative and summing to 1. ``payoffs`` is a list of N N-dimensional tensors,
``payoffs[p][i_0, ..., i_{N-1}]`` = player p's payoff when every player q plays its strategy
``i_q``; a single 2-D array ``A`` means the two-player zero-sum game ``[A, -A]`` (row player
gets ``A[i, j]``, column player ``-A[i, j]``).

Solvers, by registry name (``get_meta_solver(name, **options)``, ``META_SOLVERS``):

- ``uniform``   — uniform over the population (PSRO = fictitious play).
- ``nash``      — HiGHS LP for 2-player constant-sum; Lemke–Howson for 2-player
  general-sum; Gambit's logit-QRE limit for n > 2 players (PRD/RM approximations as fallback).
- ``prd``       — projected replicator dynamics, averaged (Lanctot et al. 2017,
  arXiv 1711.00832); dt 1e-3, gamma 1e-6, 1e5 steps.
- ``rm``        — regret matching, averaged.
- ``alpharank`` — α-Rank marginals (Omidshafiei et al. 2019, arXiv 1903.01373) via
  OpenSpiel's ``egt.alpharank``.
- ``shor`` / ``shor-eval`` — SHOR-PSRO training (stateful, annealed) and evaluation solvers
  (Li et al., arXiv 2602.16928).
- ``pm``        — PM-PSRO, our documented interpretation (see ``_shor.py``).
- ``gambit``    — Nash of any N-player general-sum game via pygambit (logit-QRE limit or
  global Newton), checked with ``meta_nash_conv`` (``_gambit.py``).
- ``ce`` / ``cce`` — correlated / coarse-correlated equilibria by HiGHS LP, selection
  ``welfare`` (max welfare) or ``maxmin`` (most mixed); ``JointMetaSolver``s whose
  ``solve_joint(payoffs)`` gives the joint sigma and ``solve`` its marginals (``_correlated.py``).

``symmetric_sigma(U)`` gives the single sigma of a symmetric zero-sum meta-game;
``meta_nash_conv(payoffs, sigmas)`` measures how far a profile is from Nash; ``meta_gap``
gives NashConv of a product sigma or the CE / CCE gap of a joint sigma. The oracle targets of
a joint sigma (``others_marginal`` for CCE, ``recommendation_conditionals`` for CE) are in
``_joint.py``.
"""

from csro.solvers.meta._alpharank import AlphaRankSolver
from csro.solvers.meta._base import (
    JointMetaSolver,
    MetaSolver,
    as_payoff_tensors,
    clean_distribution,
    meta_nash_conv,
    values_against,
)
from csro.solvers.meta._correlated import CCESolver, CESolver
from csro.solvers.meta._dynamics import PRDSolver, RMSolver
from csro.solvers.meta._gambit import GambitNashSolver
from csro.solvers.meta._joint import (
    cce_gap,
    ce_gap,
    joint_marginals,
    meta_gap,
    others_marginal,
    player_regrets,
    product_joint,
    recommendation_conditionals,
)
from csro.solvers.meta._nash import NashSolver, lemke_howson, zero_sum_maximin
from csro.solvers.meta._registry import (
    META_SOLVERS,
    get_meta_solver,
    meta_solver_options,
    symmetric_sigma,
)
from csro.solvers.meta._shor import PMSolver, ShorEvalSolver, ShorTrainSolver, shor_iterate
from csro.solvers.meta._uniform import UniformSolver

__all__ = [
    "META_SOLVERS",
    "AlphaRankSolver",
    "CCESolver",
    "CESolver",
    "GambitNashSolver",
    "JointMetaSolver",
    "MetaSolver",
    "NashSolver",
    "PMSolver",
    "PRDSolver",
    "RMSolver",
    "ShorEvalSolver",
    "ShorTrainSolver",
    "UniformSolver",
    "as_payoff_tensors",
    "clean_distribution",
    "cce_gap",
    "ce_gap",
    "get_meta_solver",
    "joint_marginals",
    "lemke_howson",
    "meta_gap",
    "meta_nash_conv",
    "meta_solver_options",
    "others_marginal",
    "player_regrets",
    "product_joint",
    "recommendation_conditionals",
    "shor_iterate",
    "symmetric_sigma",
    "values_against",
    "zero_sum_maximin",
]
