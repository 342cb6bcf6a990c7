"""Re-scoring the evolve archive after sigma changes: vector . sigma vs re-simulating it.

In PSRO the oracle's target sigma changes every iteration. The evolve oracle keeps each
archived program's payoff vector, so a new sigma costs (a) the cells against opponents the
program never met (one new member per iteration) and (b) a dot product per program; a
search that treats fitness as fixed (OpenEvolve, ShinkaEvolve, FunSearch) must re-simulate
every program against the whole support instead. Measured side by side in this run, on RRPS
with sandboxed matches (``--programs`` archived programs, ``--opponents`` old support members
plus one new one, ``--matches`` per cell):

- resimulate: every program against every support member (the store emptied first);
- rescore: the new member's cells only, then ``ProgramDatabase.rescore``.

Prints both wall times, the cells each simulated and the ratio resimulate / rescore.
Usage: python bench/evolve_rescoring.py [--programs 12 --opponents 4 --matches 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from csro.evaluation.backends import make_backend
from csro.evaluation.policy_ref import code_policy
from csro.games import load_game
from csro.config import ExecutionConfig
from csro.oracles.evolve import FULL, Program, ProgramDatabase
from csro.policies import SandboxLimits
from csro.simulate import StoredSimulator
from csro.store import RunStore

GAME = "rrps(num_throws=300)"
TEMPLATE = '''\
class Agent:
    """Plays a fixed cycle with offset {k}; counters the last throw every {m} rounds."""

    MOVES = ["ROCK", "PAPER", "SCISSORS"]
    BEATS = {{"ROCK": "PAPER", "PAPER": "SCISSORS", "SCISSORS": "ROCK"}}

    def __init__(self):
        self.t = 0

    def act(self, observation):
        self.t += 1
        last = observation["opponent_action"]
        if last is not None and self.t % {m} == 0:
            return self.BEATS[last]
        return self.MOVES[(self.t + {k}) % 3]
'''


def programs(n: int, game, prefix: str):
    return [code_policy(f"{prefix}{i}", TEMPLATE.format(k=i % 3, m=2 + i), game) for i in range(n)]


def play(sim, archive, opponents, matches) -> tuple[float, dict]:
    start = time.perf_counter()
    table = sim.play("oracle", [(p, o) for p in archive for o in opponents], matches)
    scores = {p.name: {o.name: table.mean(p.name, o.name) for o in opponents} for p in archive}
    return time.perf_counter() - start, scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=12)
    ap.add_argument("--opponents", type=int, default=4)
    ap.add_argument("--matches", type=int, default=2)
    args = ap.parse_args()
    game = load_game(GAME)
    archive = programs(args.programs, game, "a")
    old = programs(args.opponents, game, "o")
    new = code_policy("new", TEMPLATE.format(k=1, m=7), game)
    sigma = {o.name: 1.0 / (len(old) + 1) for o in old} | {"new": 1.0 / (len(old) + 1)}
    limits = SandboxLimits()
    with tempfile.TemporaryDirectory() as tmp, make_backend(ExecutionConfig()) as backend:
        store = RunStore.create(f"{tmp}/known", {"bench": True})
        sim = StoredSimulator(game, store, backend, seed=0, limits=limits)
        _, known = play(sim, archive, old, args.matches)  # what the archive knew before sigma changed
        db = ProgramDatabase(1, lambda s: None, lambda p: ())
        for p in archive:
            db.add(Program(id=p.name, iteration=1, generation=0, island=0, source=p.source, stage=FULL,
                           scores=dict(known[p.name])))
        # rescore: only the new member's cells, then vector . sigma for every program
        start = time.perf_counter()
        _, fresh = play(sim, archive, [new], args.matches)
        for p in archive:
            db.update_scores(p.name, fresh[p.name])
        db.rescore(lambda s: sum(w * s[k] for k, w in sigma.items()) if all(k in s for k in sigma) else None)
        rescore_s = time.perf_counter() - start
        best_rescored = db.best().id
        # resimulate: a cold store, every program against the whole new support
        cold = StoredSimulator(game, RunStore.create(f"{tmp}/cold", {"bench": True}), backend, seed=0, limits=limits)
        resim_s, full = play(cold, archive, old + [new], args.matches)
        best_resimulated = max(full, key=lambda n: sum(w * full[n][k] for k, w in sigma.items()))
    cells_rescore = len(archive)
    cells_resim = len(archive) * (len(old) + 1)
    print(f"archive {len(archive)} programs, support {len(old)} + 1 new, {args.matches} matches per cell")
    print(f"resimulate: {resim_s:8.2f} s  ({cells_resim} cells)")
    print(f"rescore:    {rescore_s:8.2f} s  ({cells_rescore} cells, then vector . sigma)")
    print(f"same best program: {best_rescored == best_resimulated} ({best_rescored})")
    print(f"ratio resimulate / rescore: {resim_s / rescore_s:.2f}x")


if __name__ == "__main__":
    main()
