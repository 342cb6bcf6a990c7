"""Discovery runs (``kind: discover``): LLM-driven discovery of CFR variants and PSRO meta-solvers.

Li et al., "Discovering Multiagent Learning Algorithms with Large Language Models" (arXiv
2602.16928) evolve the three CFR hooks and the PSRO meta-solver with AlphaEvolve; this
package runs the same searches on the project's engine (``csro.oracles.evolve``), with every
candidate sandboxed and its fitness computed from real solver runs.
"""

from ._cfr import CFR_PLUS, CFRHooksProblem
from ._config import DiscoverConfig
from ._psro import REGRET_MATCHING, MetaSolverProblem
from ._run import read_config, report, resume, start, status
from ._sandboxed import ProgramFailure, SandboxedProgram

__all__ = ["CFR_PLUS", "REGRET_MATCHING", "CFRHooksProblem", "DiscoverConfig", "MetaSolverProblem",
           "ProgramFailure", "SandboxedProgram", "read_config", "report", "resume", "start", "status"]
