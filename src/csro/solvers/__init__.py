"""Game-theoretic solvers: tabular CFR variants, PSRO meta-solvers and exact-oracle PSRO.

Subpackages and modules:

- ``csro.solvers.meta`` — meta-strategy solvers for empirical (meta-)games: uniform, Nash,
  projected replicator dynamics, regret matching, alpha-rank, SHOR-PSRO and PM-PSRO.
- ``csro.solvers.psro_exact`` — PSRO with exact best responses and exact meta-game payoffs.
"""
