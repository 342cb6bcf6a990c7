"""The configuration of a discovery run (``kind: discover``): what is evolved, on which games, with what budget.

Li et al. (arXiv 2602.16928): fitness is the mean over training games of -exploitability
(NashConv / N) after K = 1000 CFR iterations or K = 100 PSRO iterations; the v1 training set
is 3-player Kuhn, 2-player Leduc, 4-card Goofspiel, 5-sided Liar's Dice and the test set
their larger siblings (``csro.solvers.suite.GAME_SETS``). Those are the defaults here; a
2-core machine wants a smaller K and smaller games (see ``configs/discover-cfr.yaml``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from csro.config import EvolveConfig, LLMConfig, RunRoot


class DiscoverConfig(RunRoot):
    """One discovery run (``kind: discover``)."""

    kind: Literal["discover"] = Field("discover", description="the kind of run (csro run starts a discovery run)")
    target: Literal["cfr", "psro"] = Field("cfr", description="cfr: the three CFR hooks; psro: the training meta-solver")
    train_games: str = Field("train", description="a suite game set (train, test, all) or comma-separated suite game names")
    test_games: str = Field("test", description="held-out games, the same way")
    iterations: int | None = Field(None, ge=1, description="K: CFR (1000 in the paper) or PSRO (100) iterations per fitness run; None: the paper's")
    quick_fraction: float = Field(0.1, gt=0, le=1, description="cascade stage 2 runs this share of K iterations")
    baselines: list[str] | None = Field(None, description="library algorithms the best program is compared with (None: a standard set)")
    eval_solver: str = Field("nash", description="psro: the meta-solver whose mixture's exploitability is the fitness")
    budget: int = Field(8, ge=1, description="LLM calls in all (each writes one program)")
    seed: int = Field(0, ge=0, description="fixes sampling and every LLM seed")
    eval_seconds: float = Field(300.0, gt=0, description="wall-clock limit of one program's evaluation on one game (sandboxed)")
    memory_mb: int = Field(2048, ge=256, description="address-space limit of an evaluation's worker")
    max_tokens: int = Field(1024, ge=64, description="completion budget of one LLM call")
    evolve: EvolveConfig = EvolveConfig(generations=1000, population_size=2, islands=2)
    llm: LLMConfig = LLMConfig()

    @field_validator("baselines")
    @classmethod
    def _non_empty(cls, v):
        if v is not None and not v:
            raise ValueError("must name at least one algorithm, or be null")
        return v

    def k(self) -> int:
        """K: the configured iterations or the paper's."""
        return self.iterations or (1000 if self.target == "cfr" else 100)

    def to_dict(self) -> dict:
        """As stored: the fields under ``discover`` (the shape of the first discovery runs), and the kind."""
        return {"kind": self.kind, "discover": self.model_dump(mode="json")}
