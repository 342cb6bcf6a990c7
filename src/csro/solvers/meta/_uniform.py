"""Uniform meta-solver: every population member equally likely (fictitious play in PSRO)."""

from __future__ import annotations

import dataclasses

import numpy as np

from csro.solvers.meta._base import MetaSolver, uniform_profile


@dataclasses.dataclass(frozen=True)
class UniformSolver(MetaSolver):
    """Uniform sigma over each player's strategies; ignores the payoffs. No options."""

    name = "uniform"

    def _solve(self, tensors: list[np.ndarray]) -> list[np.ndarray]:
        return uniform_profile(tensors[0].shape)
