"""Rank programs in the axelrod tournament of the iterated prisoner's dilemma.

    python examples/ipd_rank.py RUN_DIR [--matches 1]    # every code policy of a CSRO run on ipd
    python examples/ipd_rank.py policy.py [...]           # or policy files

Every entrant meets every axelrod strategy of the game's evaluation population and every
other entrant (``csro.evaluation.round_robin``, scored and ranked as the axelrod library does:
the mean score per turn over the opponents). The population's own round robin is most of the
work (about 25,000 matches); its table is cached in ``~/.cache/csro`` for later rankings.
"""

from __future__ import annotations

import argparse
import pathlib
import pickle

from csro.evaluation import code_policy, resolve, round_robin
from csro.games import load_game
from csro.llm.models import cache_dir
from csro.store import RunStore


def entrants(paths: list[str], game) -> list:
    out = []
    for path in map(pathlib.Path, paths):
        if path.is_dir():
            with RunStore.open(path) as store:
                out += [code_policy(f"csro:{r.id}", r.source, game) for r in store.policies() if r.source]
        else:
            out.append(code_policy(f"csro:{path.stem}", path.read_text(), game))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--matches", type=int, default=1)
    args = parser.parse_args()
    game = load_game("ipd")
    population = [resolve(ref, game) for ref in game.population()]
    cache = cache_dir() / f"ipd-round-robin-{args.matches}.pickle"
    known = pickle.loads(cache.read_bytes()) if cache.exists() else None
    if known is None:
        known = round_robin(game, population, matches=args.matches).table
        cache.write_bytes(pickle.dumps(known))
    mine = entrants(args.paths, game)
    result = round_robin(game, population + mine, matches=args.matches, known=known)
    per_turn = result.per_turn(game.turns)
    for spec in mine:
        print(f"{spec.name}: rank {result.rank(spec.name)} of {len(result.ranking)}, "
              f"{per_turn[spec.name]:.3f} points per turn")
    best = result.ranking[0]
    print(f"first: {best} ({per_turn[best]:.3f} per turn)")


if __name__ == "__main__":
    main()
