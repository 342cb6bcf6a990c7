"""Valid-program rate and utility of an embedded model per prompt lever, on the real CSRO context.

    python bench/valid_rate.py [--model qwen2.5-coder-0.5b] [--samples 4] [--levers a,b,...]
                               [--max-tokens 640] [--threads N] [--matches 2] [--temperature 0.8] [--model-sampling]

The prompt is the one the loop builds (``ContextBuilder`` with the run's ``oracle.context``
defaults), for a best response in RRPS to sigma over three code opponents: the game's example
policy, ``examples/policies/rrps_frequency.py`` and ``bench/policies/rrps_markov.py`` (sigma
0.4 / 0.35 / 0.25). Programs are drawn, extracted, checked and repaired by the loop's own
``Proposer`` and ``MatchArena`` with the grammar fallback off, so "valid" is the rate *before*
any grammar fallback. Each valid program is played against sigma (``--matches`` matches per
opponent). "valid" counts samples valid at the first draw and after the repairs (the same
for levers without repairs); ``mean u`` is the mean of their utilities, ``best u`` the best of them (what
best-of-N sampling keeps). ``s/sample`` is wall time per sample, repairs and evaluation
included.

Levers (rows; each a full configuration, see ``LEVERS``): the old prefill prompt (API as
code with stub bodies, no contract), then the API as an outline, the runner's contract, the
``scaffold`` prefill, repairs with and without error-specific hints, and the worked example
(``oracle.example``) with each prefill style.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import statistics
import tempfile
import time

from csro.arena import MatchArena, Opponent, Target
from csro.config import LLMConfig, OracleConfig
from csro.evaluation import code_policy
from csro.evaluation.backends import LocalBackend
from csro.games import CodeGame, load_game
from csro.llm import LLMClient, LLMSession, make_provider
from csro.oracles import OracleContext
from csro.oracles._context import ContextBuilder, PromptLevers
from csro.oracles._propose import Proposer
from csro.policies import SandboxLimits
from csro.store import StoreLog
from csro.simulate import StoredSimulator
from csro.store import RunStore

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPPONENT_FILES = (ROOT / "examples/policies/rrps_frequency.py", ROOT / "bench/policies/rrps_markov.py")
WEIGHTS = (0.4, 0.35, 0.25)


@dataclasses.dataclass(frozen=True)
class Lever:
    """One row: the prompt style, the prompt levers, repairs, and whether repairs carry hints."""

    prompt: str
    levers: PromptLevers
    repairs: int = 0
    hints: bool = True
    example: bool = False


OLD = PromptLevers(api="code", contract=False)
NEW = PromptLevers()
LEVERS = {
    "prefill": Lever("prefill", OLD),
    "prefill+outline": Lever("prefill", PromptLevers(api="outline", contract=False)),
    "prefill+outline+contract": Lever("prefill", NEW),
    "scaffold": Lever("scaffold", NEW),
    "scaffold+repair": Lever("scaffold", NEW, repairs=2),
    "scaffold+repair-nohints": Lever("scaffold", NEW, repairs=2, hints=False),
    "prefill+repair": Lever("prefill", NEW, repairs=2),
    "plain+example": Lever("plain", NEW, example=True),
    "prefill+example": Lever("prefill", NEW, example=True),
    "scaffold+example": Lever("scaffold", NEW, example=True),
    "scaffold+example+repair": Lever("scaffold", NEW, repairs=2, example=True),
}


def measure(lever: Lever, ctx: OracleContext) -> tuple[int, list[float], int]:
    """(samples valid at the first draw, utilities of the valid final programs, number of
    samples) for one lever."""
    ctx = dataclasses.replace(ctx, config=ctx.config.model_copy(update={
        "prompt": lever.prompt, "example": lever.example, "max_repairs": lever.repairs,
        "grammar_fallback": False}))
    messages = ContextBuilder(lever.levers).messages(ctx.game, list(ctx.target.opponents), ctx.config)
    proposer = Proposer(ctx, repair_hints=lever.hints)
    proposer.generate("propose", messages, 0)
    final: dict[str, object] = {}
    for a in proposer.attempts:  # the last attempt of each sample is its final program
        final[a.key.split("/")[2]] = a
    errors = [a.error.strip().splitlines()[-1][:120] for a in final.values() if not a.valid]
    for e in errors:
        print(f"    invalid: {e}", flush=True)
    first = sum(a.valid and a.step == "propose" for a in final.values())
    return first, [a.utility for a in final.values() if a.valid], ctx.config.samples


def rrps_opponents(game: CodeGame) -> tuple[Opponent, ...]:
    """Sigma over three code opponents: the game's example policy and ``OPPONENT_FILES``."""
    sources = [game.example_policy] + [f.read_text() for f in OPPONENT_FILES]
    return tuple(Opponent(f"p{i}", w, code_policy(f"p{i}", src, game)) for i, (w, src) in enumerate(zip(WEIGHTS, sources)))


def oracle_context(game: CodeGame, opponents: tuple[Opponent, ...], client: LLMClient, sim: StoredSimulator,
                   config: OracleConfig, *, matches: int, temperature: float, seed: int) -> OracleContext:
    """The context of iteration 1's best response (player 0) to ``opponents``, as the loop builds it."""
    return OracleContext(game, Target(1, 0, opponents), LLMSession(client, 1, temperature, seed),
                         MatchArena(game, sim, matches=matches), config,
                         StoreLog(sim.store, 1, 0, lambda kind, data: None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=640)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--matches", type=int, default=2, help="matches per opponent for u")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature of every call")
    parser.add_argument("--model-sampling", action="store_true",
                        help="the model's published top-p, top-k and repetition penalty (llm.model_sampling)")
    parser.add_argument("--levers", default=",".join(LEVERS))
    args = parser.parse_args()
    game = load_game("rrps")
    opponents = rrps_opponents(game)
    client = LLMClient(make_provider(LLMConfig(model=args.model, threads=args.threads, model_sampling=args.model_sampling)), concurrency=1)
    print(f"temperature {args.temperature:g}, seed {args.seed}, model sampling {args.model_sampling}", flush=True)
    print(f"| {args.model} | valid / {args.samples} at the first draw | after repairs | mean u | best u | s/sample |\n"
          "|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory() as tmp, RunStore.create(f"{tmp}/run", {}) as store:
        sim = StoredSimulator(game, store, LocalBackend(), seed=0, limits=SandboxLimits())
        for name in args.levers.split(","):
            ctx = oracle_context(game, opponents, client, sim, OracleConfig(samples=args.samples, max_tokens=args.max_tokens),
                                 matches=args.matches, temperature=args.temperature, seed=args.seed)
            started = time.monotonic()
            first, utilities, n = measure(LEVERS[name], ctx)
            mean = f"{statistics.mean(utilities):+.1f}" if utilities else "-"
            best = f"{max(utilities):+.1f}" if utilities else "-"
            print(f"| {name} | {first} | {len(utilities)} | {mean} | {best} | {(time.monotonic() - started) / n:.0f} |", flush=True)
    client.close()


if __name__ == "__main__":
    main()
