"""Round-robin tournaments of two-player games, scored and ranked as the axelrod library does.

Axelrod's tournaments (and the axelrod library's ``Tournament`` / ``ResultSet``, Knight et al.,
JORS 2016) play every pair of entrants and rank them by their *normalised score*: the mean,
over the other entrants, of the score per turn against each. We play every unordered pair
``matches`` times through the match runner (seats alternate, so each plays both seats; no
self-play, which axelrod also leaves out of the normalised score) and score each player by
the mean over its opponents of its mean match return; ``per_turn`` divides by the match
length for repeated games (axelrod's figure). Ranking: highest score first, ties in the
order the players were given — as ``ResultSet.ranking``, which sorts by the median over
repetitions (identical to our mean over matches whenever the strategies are deterministic).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Sequence

from csro.errors import ConfigError
from csro.evaluation.payoff_table import PayoffTable
from csro.evaluation.policy_ref import PolicySpec
from csro.evaluation.payoff_table import record
from csro.evaluation.runner import ProgressFn, plan_chunks, run_chunks
from csro.games import CodeGame
from csro.policies import SandboxLimits
from csro.seeding import draw_seed

if TYPE_CHECKING:
    from csro.evaluation.backends import Backend


@dataclasses.dataclass(frozen=True)
class Tournament:
    """Scores (mean match return over the opponents) and the ranking, best first."""

    players: tuple[str, ...]
    scores: dict[str, float]
    ranking: tuple[str, ...]
    table: PayoffTable

    def rank(self, player: str) -> int:
        """1-based rank of ``player`` (1 = best)."""
        return self.ranking.index(player) + 1

    def per_turn(self, turns: int) -> dict[str, float]:
        """Scores divided by the match length: axelrod's normalised scores."""
        return {p: s / turns for p, s in self.scores.items()}


def round_robin(game: CodeGame, players: Sequence[PolicySpec], *, matches: int = 1, seed: int | None = None,
                limits: SandboxLimits = SandboxLimits(), processes: int | None = None,
                progress: ProgressFn | None = None, backend: Backend | None = None,
                known: PayoffTable | None = None) -> Tournament:
    """Every unordered pair of ``players`` plays ``matches`` matches; see the module docstring.

    ``known``: a table of earlier results (e.g. ``table`` of the population's own round
    robin); pairs it holds results for are taken from it as they are and not played again,
    so ranking a new entrant costs only its own matches. Match seeds depend on the names
    and match index only, so with the same ``matches`` and ``seed`` the answer is the same
    (``seed`` None: one is drawn, ``csro.seeding.draw_seed``, and the matches are not repeatable).
    """
    if game.num_players != 2:
        raise ConfigError(f"a round-robin tournament needs a two-player game; {game.name!r} has "
                          f"{game.num_players} players")
    names = [p.name for p in players]
    if len(names) < 2 or len(set(names)) != len(names):
        raise ConfigError(f"a tournament needs at least two players with unique names, got {names}")
    if matches < 1:
        raise ConfigError(f"matches must be at least 1, got {matches}")
    pairs = [(a, b) for i, a in enumerate(players) for b in players[i + 1:]]
    table = PayoffTable()
    if known is not None:
        table.merge(known)
        pairs = [(a, b) for a, b in pairs if not table.has(a.name, b.name)]
    chunks = plan_chunks(game.name, 2, pairs, matches, draw_seed() if seed is None else seed, limits)
    results = backend.run(chunks, progress=progress) if backend else run_chunks(chunks, processes, progress)
    record(table, results)
    scores = {a: sum(table.mean(a, b) for b in names if b != a) / (len(names) - 1) for a in names}
    order = sorted(range(len(names)), key=lambda i: -scores[names[i]])
    return Tournament(tuple(names), scores, tuple(names[i] for i in order), table)
