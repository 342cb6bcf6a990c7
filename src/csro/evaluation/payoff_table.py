"""The one payoff table: per (policy, opponent) cell the sum, sum of squares and count
of the policy's match returns, plus its forfeits by reason.

Cell ``(a, b)`` holds *a*'s returns in matches against *b* (in an n-player game: *a* in
one seat, *b* in every other seat). Both directions are recorded from every match, so
``(b, a)`` is filled too; in zero-sum two-player games it is the negation. Means, sample
variances and 95% confidence intervals come from the sufficient statistics, so tables
from different runs merge by addition.

Mixtures are first-class: a mixture (a sigma over policies) is valued as the
sigma-weighted expectation over its members' cells — the natural reading of the CSRO
paper (Hennes et al., arXiv 2603.10098), which does not say how a mixture plays a match.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import Iterable, Mapping


Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclasses.dataclass
class Cell:
    """Sufficient statistics of one (policy, opponent) cell."""

    total: float = 0.0
    total_sq: float = 0.0
    count: int = 0
    forfeits: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def add(self, value: float, forfeit: str | None = None) -> None:
        self.total += value
        self.total_sq += value * value
        self.count += 1
        if forfeit is not None:
            self.forfeits[forfeit] += 1

    @property
    def mean(self) -> float:
        if self.count == 0:
            raise KeyError("empty cell")
        return self.total / self.count

    @property
    def variance(self) -> float:
        """Unbiased sample variance of one match's return (0 for a single match)."""
        if self.count < 2:
            return 0.0
        var = (self.total_sq - self.total * self.total / self.count) / (self.count - 1)
        return max(var, 0.0)

    @property
    def sem(self) -> float:
        """Standard error of the mean."""
        return math.sqrt(self.variance / self.count) if self.count else math.inf


@dataclasses.dataclass(frozen=True)
class Mixture:
    """A meta-strategy: non-negative weights over named policies, summing to one."""

    weights: Mapping[str, float]

    def __post_init__(self) -> None:
        total = sum(self.weights.values())
        if total <= 0 or any(w < 0 for w in self.weights.values()):
            raise ValueError(f"mixture weights must be non-negative with a positive sum: {dict(self.weights)}")
        object.__setattr__(self, "weights", {k: w / total for k, w in self.weights.items() if w > 0})

    @classmethod
    def pure(cls, name: str) -> "Mixture":
        return cls({name: 1.0})

    @classmethod
    def of(cls, names: Iterable[str], sigma: Iterable[float]) -> "Mixture":
        return cls(dict(zip(names, (float(s) for s in sigma), strict=True)))


Side = str | Mixture


class PayoffTable:
    """Payoff cells keyed by (policy name, opponent name)."""

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], Cell] = {}

    def cell(self, policy: str, opponent: str) -> Cell:
        """The cell, created empty if needed."""
        key = (policy, opponent)
        if key not in self._cells:
            self._cells[key] = Cell()
        return self._cells[key]

    def add(self, policy: str, opponent: str, value: float, forfeit: str | None = None) -> None:
        """Record one match return of ``policy`` against ``opponent``."""
        self.cell(policy, opponent).add(value, forfeit)

    def has(self, policy: str, opponent: str) -> bool:
        cell = self._cells.get((policy, opponent))
        return cell is not None and cell.count > 0

    def count(self, policy: str, opponent: str) -> int:
        cell = self._cells.get((policy, opponent))
        return cell.count if cell else 0

    def merge(self, other: "PayoffTable") -> None:
        """Add another table's statistics into this one."""
        for (a, b), c in other._cells.items():
            mine = self.cell(a, b)
            mine.total += c.total
            mine.total_sq += c.total_sq
            mine.count += c.count
            mine.forfeits.update(c.forfeits)

    def mean(self, policy: str, opponent: str) -> float:
        cell = self._cells.get((policy, opponent))
        if cell is None or cell.count == 0:
            raise KeyError(f"no matches recorded for {policy!r} vs {opponent!r}")
        return cell.mean

    def value(self, side: Side, against: Side) -> float:
        """Expected return of ``side`` against ``against``; either may be a Mixture."""
        a, b = _as_mixture(side), _as_mixture(against)
        return sum(wa * wb * self.mean(pa, pb) for pa, wa in a.weights.items() for pb, wb in b.weights.items())

    def sem(self, side: Side, against: Side) -> float:
        """Standard error of ``value`` (cells treated as independent)."""
        a, b = _as_mixture(side), _as_mixture(against)
        var = sum(
            (wa * wb) ** 2 * self._cells[(pa, pb)].sem ** 2
            for pa, wa in a.weights.items()
            for pb, wb in b.weights.items()
        )
        return math.sqrt(var)

    def forfeits(self, policy: str) -> collections.Counter:
        """All of ``policy``'s forfeits by reason, over every opponent."""
        total: collections.Counter = collections.Counter()
        for (a, _), c in self._cells.items():
            if a == policy:
                total.update(c.forfeits)
        return total

    def policies(self) -> list[str]:
        return sorted({a for a, _ in self._cells})

    def to_dict(self) -> dict:
        """Plain-data form (for JSON and the run store)."""
        return {
            "cells": [
                {"policy": a, "opponent": b, "sum": c.total, "sum_sq": c.total_sq, "count": c.count,
                 "forfeits": dict(c.forfeits)}
                for (a, b), c in sorted(self._cells.items())
            ]
        }

    @classmethod
    def from_dict(cls, data: dict) -> "PayoffTable":
        table = cls()
        for row in data["cells"]:
            cell = table.cell(row["policy"], row["opponent"])
            cell.total, cell.total_sq, cell.count = row["sum"], row["sum_sq"], row["count"]
            cell.forfeits.update(row["forfeits"])
        return table


def _as_mixture(side: Side) -> Mixture:
    return side if isinstance(side, Mixture) else Mixture.pure(side)


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """The outcome of one match. ``forfeit`` is (seat, reason, detail) or None; ``trace``
    holds one readable line per answered round when the chunk asked for it (not stored)."""

    policies: tuple[str, ...]
    returns: tuple[float, ...]
    seed: int
    forfeit: tuple[int, str, str] | None = None
    trace: tuple[str, ...] = ()


def record(table: PayoffTable, results: Iterable[MatchResult]) -> None:
    """Add match results to a payoff table, both directions of every pairing.

    A self-play match (every seat the same policy) is recorded once, from seat 0, as the
    published RRPS bot table does (row player's return).
    """
    for res in results:
        names = res.policies
        if len(set(names)) == 1:
            reason = res.forfeit[1] if res.forfeit else None
            table.add(names[0], names[0], res.returns[0], reason)
            continue
        for seat, name in enumerate(names):
            opponent = next(names[s] for s in range(len(names)) if names[s] != name)
            reason = res.forfeit[1] if res.forfeit and res.forfeit[0] == seat else None
            table.add(name, opponent, res.returns[seat], reason)
