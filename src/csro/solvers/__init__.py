"""Game-theoretic solvers: tabular CFR variants, PSRO meta-solvers and exact-oracle PSRO.

Subpackages and modules:

- ``csro.solvers.meta`` — meta-strategy solvers for empirical (meta-)games: uniform, Nash,
  projected replicator dynamics, regret matching, alpha-rank, SHOR-PSRO and PM-PSRO.
- ``csro.solvers.psro_exact`` — PSRO with exact best responses and exact meta-game payoffs.
- ``csro.solvers.cfr`` — the CFR family (CFR, CFR+, LCFR, DCFR, PCFR+, DPCFR+, HS-PCFR+,
  VAD-CFR, AOD-CFR, WOP-CFR) as hooks over one vectorised tree engine.
- ``csro.solvers.suite`` — the CFR game suite (train / test / all) and its runner.
"""
