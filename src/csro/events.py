"""The kinds of events a run records, by name: one definition for producers and consumers.

Events go to the run store as ``(iteration, kind, data)`` when they happen (the loop, the
oracles, the evolutionary search, discovery and AOR runs write them; the CLI's progress
lines and the report read them). Their ``data`` is a JSON object; the fields each kind
carries are documented where it is produced.
"""

from __future__ import annotations

# The CSRO loop (csro.psro) and the run (csro.runs).
ITERATION_START = "iteration_start"
ITERATION_DONE = "iteration_done"
SIGMA = "sigma"
DUPLICATE = "duplicate"
ORACLE_FAILED = "oracle_failed"
FINAL_EVALUATION = "final_evaluation"
EXPLOITABILITY_ESTIMATE = "exploitability_estimate"
BUDGET_EXHAUSTED = "budget_exhausted"  # the run stopped at its LLM budget, ``{"reason": ...}``
# the run stopped because its LLM provider could not answer, ``{"reason", "provider", "attempts", "waited_s"}``
PROVIDER_STOPPED = "provider_stopped"
STOPS = (BUDGET_EXHAUSTED, PROVIDER_STOPPED)  # the events of ``csro.errors.RunStopped``
SANDBOX = "sandbox"  # the kernel layers untrusted code ran under from here on (csro.policies.check_layers)

# A reproduction grid (csro.reproduce): a cell starts, resumes, is done or failed, ``{"cell", "what"}``.
GRID_CELL = "grid_cell"

# The oracles (csro.oracles).
ORACLE_CANDIDATE = "oracle_candidate"
ORACLE_REJECTED = "oracle_rejected"
ORACLE_DIAGNOSIS = "oracle_diagnosis"

# The evolutionary search (csro.oracles.evolve) and discovery (csro.discover).
EVOLVE_RESCORED = "evolve_rescored"
EVOLVE_GENERATION = "evolve_generation"
EVOLVE_STOPPED = "evolve_stopped"
EVOLVE_SEED_REJECTED = "evolve_seed_rejected"
DISCOVER_START = "discover_start"
DISCOVER_COMPARE = "discover_compare"

# Act-Observe-Rewrite runs (csro.robots).
ROUND_START = "round_start"
ROUND_DONE = "round_done"
CONTROLLER = "controller"
EPISODE = "episode"
FINAL = "final"
