"""csro — Code-Space Response Oracles.

PSRO whose best-response oracle is an LLM that writes policies as Python code
(Hennes, Li, Schultz, Lanctot, arXiv 2603.10098), with the game-theoretic solver
library of Li, Schultz, Hennes, Lanctot (arXiv 2602.16928).
"""

__version__ = "0.1.0"
