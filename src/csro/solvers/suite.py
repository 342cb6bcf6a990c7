"""The CFR game suite and its runner: every algorithm on every game, ranked.

Named sets (``GAME_SETS``):

- ``train``: the AlphaEvolve paper's training games (arXiv 2602.16928, v1 section 4.1):
  3-player Kuhn, 2-player Leduc, 4-card Goofspiel, 5-sided Liar's Dice.
- ``test``: its test games: 4-player Kuhn, 3-player Leduc, 5-card Goofspiel, 6-sided
  Liar's Dice.
- ``all``: 18 games over Poker, Goofspiel, Liar's Dice, Blotto and Battleship. v3 of the paper
  lists no parameters, so these are ours, chosen to solve exactly on a small machine (sizes
  in docs/solvers.md). Goofspiel and Blotto are simultaneous-move and run turn-based;
  Battleship uses ``loss_multiplier=1`` (its default), which makes it zero-sum.

``run_suite`` runs each algorithm on each game for K iterations, records the exploitability
of the average policy at log-spaced checkpoints, and writes into the output folder:
``curves.csv`` (game, game_string, algo, iteration, nash_conv, exploitability, seconds),
``summary.csv`` (final exploitability and rank per game and algorithm), ``trees.csv`` (tree
sizes and build times), and one log-log plot per game, ``<game>.png``, with every algorithm
on it. Ranks are per game (1 = lowest final
exploitability; ties share the average rank; values below ``RANK_ZERO`` = 1e-13 are
floating-point noise and tie at 0); the mean rank is over the games.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import math
from pathlib import Path
from typing import Callable

import numpy as np

from csro.errors import ConfigError
from csro.solvers.cfr import ALGORITHMS, SolveConfig, SolveResult, build_tree, log_checkpoints
from csro.solvers.cfr import solve as _solve

log = logging.getLogger(__name__)

__all__ = ["SuiteGame", "GAMES", "GAME_SETS", "SuiteConfig", "SuiteResult", "resolve_games",
           "run_suite"]


@dataclasses.dataclass(frozen=True)
class SuiteGame:
    """A suite entry: a short name (files, tables) and the OpenSpiel game string."""

    name: str
    game: str


_BATTLESHIP = "battleship(board_width={w},board_height={h},ship_sizes=[{s}],ship_values=[1.0],num_shots={n},loss_multiplier=1.0)"

GAMES: dict[str, SuiteGame] = {
    g.name: g
    for g in [
        SuiteGame("kuhn_2p", "kuhn_poker"),
        SuiteGame("kuhn_3p", "kuhn_poker(players=3)"),
        SuiteGame("kuhn_4p", "kuhn_poker(players=4)"),
        SuiteGame("kuhn_5p", "kuhn_poker(players=5)"),
        SuiteGame("leduc_2p", "leduc_poker"),
        SuiteGame("leduc_3p", "leduc_poker(players=3)"),
        SuiteGame("goofspiel_3", "goofspiel(num_cards=3)"),
        SuiteGame("goofspiel_4", "goofspiel(num_cards=4)"),
        SuiteGame("goofspiel_5", "goofspiel(num_cards=5)"),
        SuiteGame("goofspiel_4_3p", "goofspiel(num_cards=4,players=3)"),
        SuiteGame("liars_dice_4", "liars_dice(dice_sides=4)"),
        SuiteGame("liars_dice_5", "liars_dice(dice_sides=5)"),
        SuiteGame("liars_dice_6", "liars_dice(dice_sides=6)"),
        SuiteGame("blotto_4c3f", "blotto(coins=4,fields=3)"),
        SuiteGame("blotto_5c3f_3p", "blotto(coins=5,fields=3,players=3)"),
        SuiteGame("battleship_2x2_s1", _BATTLESHIP.format(w=2, h=2, s=1, n=2)),
        SuiteGame("battleship_2x2_s2", _BATTLESHIP.format(w=2, h=2, s=2, n=3)),
        SuiteGame("battleship_3x2_s2", _BATTLESHIP.format(w=3, h=2, s=2, n=2)),
    ]
}

GAME_SETS: dict[str, tuple[str, ...]] = {
    "train": ("kuhn_3p", "leduc_2p", "goofspiel_4", "liars_dice_5"),
    "test": ("kuhn_4p", "leduc_3p", "goofspiel_5", "liars_dice_6"),
    "all": tuple(GAMES),
}


def resolve_games(spec: str) -> tuple[SuiteGame, ...]:
    """``train``, ``test``, ``all``, or a comma-separated list of suite game names."""
    spec = spec.strip()
    if spec in GAME_SETS:
        return tuple(GAMES[n] for n in GAME_SETS[spec])
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in GAMES]
    if not names or unknown:
        raise ConfigError(
            f"unknown game set or suite game {', '.join(unknown) or spec!r}; valid sets: "
            f"{', '.join(GAME_SETS)}; games: {', '.join(GAMES)}"
        )
    return tuple(GAMES[n] for n in names)


@dataclasses.dataclass(frozen=True)
class SuiteConfig:
    """A suite run.

    Attributes:
      games: the games, in run order.
      algos: algorithm names (``csro.solvers.cfr.ALGORITHMS``), in table order.
      iterations: K, iterations per run (also each variant's horizon).
      out: the output folder (created).
      checkpoints: iterations at which exploitability is recorded; empty means about 24
        log-spaced ones. K is always included.
    """

    games: tuple[SuiteGame, ...]
    algos: tuple[str, ...]
    iterations: int
    out: Path
    checkpoints: tuple[int, ...] = ()

    def __post_init__(self):
        if not self.games:
            raise ConfigError("the suite needs at least one game")
        if not self.algos:
            raise ConfigError("the suite needs at least one algorithm")
        unknown = [a for a in self.algos if a not in ALGORITHMS]
        if unknown:
            raise ConfigError(
                f"unknown CFR algorithm {', '.join(unknown)}; valid: {', '.join(ALGORITHMS)}"
            )
        if len(set(self.algos)) != len(self.algos):
            raise ConfigError(f"algorithms listed twice: {', '.join(self.algos)}")
        # validates iterations and checkpoints
        SolveConfig(self.games[0].game, self.algos[0], self.iterations, self.checkpoints)

    @property
    def schedule(self) -> tuple[int, ...]:
        points = self.checkpoints or log_checkpoints(self.iterations)
        return tuple(sorted(set(points) | {self.iterations}))


@dataclasses.dataclass(frozen=True)
class SuiteResult:
    """Final exploitability per (game, algo), ranks and mean ranks."""

    config: SuiteConfig
    runs: dict[tuple[str, str], SolveResult]
    tree_sizes: dict[str, dict]

    def final(self, game: str, algo: str) -> float:
        return self.runs[(game, algo)].exploitability

    def ranks(self) -> dict[str, dict[str, float]]:
        """``ranks[game][algo]``: 1 is best; ties share the average rank."""
        from scipy.stats import rankdata

        out = {}
        for g in self.config.games:
            values = [self.final(g.name, a) for a in self.config.algos]
            keys = [_rank_key(v) for v in values]
            out[g.name] = dict(zip(self.config.algos, rankdata(keys).tolist()))
        return out

    def mean_ranks(self) -> dict[str, float]:
        ranks = self.ranks()
        return {
            a: float(np.mean([ranks[g.name][a] for g in self.config.games]))
            for a in self.config.algos
        }


#: Exploitabilities below this count as 0 when ranking: with utilities of order 1 they are
#: floating-point noise (NashConv is a difference of values of order 1).
RANK_ZERO = 1e-13


def _rank_key(value: float) -> float:
    """Ranking key: noise-level values tie at 0; others compare on 12 significant digits."""
    if not math.isfinite(value):
        return math.inf
    if value < RANK_ZERO:
        return 0.0
    return float(f"{value:.12e}")


def run_suite(
    config: SuiteConfig,
    on_start: Callable[[SuiteGame, str], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SuiteResult:
    """Run every algorithm on every game, writing results as they come (see module doc).

    ``on_start(game, algo)`` is called before each run; ``progress(done, total)`` after each
    iteration of it.
    """
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    curves_path = out / "curves.csv"
    runs: dict[tuple[str, str], SolveResult] = {}
    sizes: dict[str, dict] = {}
    with curves_path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            ["game", "game_string", "algo", "iteration", "nash_conv", "exploitability", "seconds"]
        )
        for game in config.games:
            tree = build_tree(game.game)
            sizes[game.name] = tree.summary()
            log.info("suite: %s tree %s", game.name, sizes[game.name])
            for algo in config.algos:
                if on_start is not None:
                    on_start(game, algo)
                result = _solve(
                    SolveConfig(game.game, algo, config.iterations, config.schedule),
                    progress=progress,
                    tree=tree,
                )
                runs[(game.name, algo)] = result
                for point in result.curve:
                    writer.writerow([game.name, game.game, algo, point.iteration,
                                     repr(point.nash_conv), repr(point.exploitability),
                                     f"{point.seconds:.3f}"])
                fh.flush()
            del tree
            _plot_game(game, config, runs, out / f"{game.name}.png")
    result = SuiteResult(config, runs, sizes)
    _write_summary(result, out / "summary.csv")
    _write_trees(sizes, out / "trees.csv")
    return result


def _write_trees(sizes: dict[str, dict], path: Path) -> None:
    fields = ["game", "players", "nodes", "terminals", "infosets", "depth", "max_actions",
              "megabytes", "build_seconds"]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["name", *fields])
        writer.writeheader()
        for name, summary in sizes.items():
            writer.writerow({"name": name, **{k: summary[k] for k in fields}})


def _write_summary(result: SuiteResult, path: Path) -> None:
    ranks = result.ranks()
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["game", "algo", "final_exploitability", "rank", "seconds"])
        for g in result.config.games:
            for a in result.config.algos:
                run = result.runs[(g.name, a)]
                writer.writerow([g.name, a, repr(run.exploitability), ranks[g.name][a],
                                 f"{run.seconds:.2f}"])
        for a, r in result.mean_ranks().items():
            writer.writerow(["(mean rank)", a, "", f"{r:.3f}", ""])


def _plot_game(game: SuiteGame, config: SuiteConfig, runs, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for algo in config.algos:
        curve = runs[(game.name, algo)].curve
        x = [p.iteration for p in curve]
        y = [max(p.exploitability, 1e-16) for p in curve]
        ax.plot(x, y, label=algo, linewidth=1.4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("exploitability (NashConv / players)")
    ax.set_title(f"{game.name}: {game.game}", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
