"""Valid-program rate of an embedded model per prompt style, on RRPS.

    python bench/valid_rate.py [--model qwen2.5-coder-0.5b] [--samples 5] [--max-tokens 512]

For each style, ``--samples`` programs are drawn for the same best-response prompt (opponents:
the game's example policy and ``builtin:rockbot``, sigma 1/2 each) and checked in the sandbox
(``csro.arena.MatchArena.check``): plain, example, prefill (no repair), prefill+repair (up to
2 repairs with the error fed back), grammar (the RRPS rule grammar). "valid" counts samples
whose final program passed; "beats" those with a positive mean return against the two
opponents (one match each); "s/sample" is the wall time per sample, repairs included.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time

from csro.arena import MatchArena, Opponent, Target
from csro.config import LLMConfig, OracleConfig
from csro.evaluation import code_policy, resolve
from csro.evaluation.backends import LocalBackend
from csro.extract import extract_code
from csro.games import load_game
from csro.llm import LLMClient, LLMSession, make_provider
from csro.oracles import OracleContext
from csro.oracles._context import ContextBuilder
from csro.oracles._grammar import grammar_for
from csro.oracles._propose import Proposer
from csro.policies import SandboxLimits
from csro.psro import StoreLog
from csro.simulate import StoredSimulator
from csro.store import RunStore

STYLES = {  # name -> (prompt, max_repairs)
    "plain": ("plain", 0), "example": ("example", 0), "prefill": ("prefill", 0),
    "prefill+repair": ("prefill", 2), "grammar": ("prefill", 0),
}


def run_style(style: str, ctx: OracleContext) -> tuple[int, int]:
    """(valid, beats) among the samples of one style."""
    prompt, repairs = STYLES[style]
    ctx = dataclasses.replace(ctx, config=ctx.config.model_copy(update={"prompt": prompt, "max_repairs": repairs,
                                                                         "grammar_fallback": False}))
    messages = ContextBuilder().messages(ctx.game, list(ctx.target.opponents), ctx.config)
    proposer = Proposer(ctx)
    if style == "grammar":
        head, gbnf = grammar_for(ctx.game)
        requests = [proposer.request(f"{style}", messages, s, prefill_text=head, grammar=gbnf, stop=(), max_tokens=256)
                    for s in range(ctx.config.samples)]
        sources = [extract_code(r.full_text, ctx.game.policy_class).source for r in ctx.llm.complete_many(requests)]
        checked = ctx.arena.check([s or "" for s in sources])
        good = [s for s, e in zip(sources, checked) if s and e is None]
        return len(good), sum(ctx.evaluate(s).utility > 0 for s in good)
    proposer.generate(style, messages, 0)
    by_sample: dict[str, dict] = {}
    for a in proposer.attempts:  # the last attempt of each sample is its final program
        by_sample[a.key.split("/")[2]] = a
    valid = [a for a in by_sample.values() if a.valid]
    return len(valid), sum(a.utility > 0 for a in valid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--styles", default=",".join(STYLES))
    args = parser.parse_args()
    game = load_game("rrps")
    opponents = [Opponent("p0", 0.5, code_policy("p0", game.example_policy, game)),
                 Opponent("p1", 0.5, resolve("builtin:rockbot", game), "throws ROCK every time")]
    client = LLMClient(make_provider(LLMConfig(model=args.model)), concurrency=1)
    with tempfile.TemporaryDirectory() as tmp, RunStore.create(f"{tmp}/run", {}) as store:
        # u over one match per opponent: a cheap stand-in for the run's evaluation
        sim = StoredSimulator(game, store, LocalBackend(), seed=0, limits=SandboxLimits())
        ctx = OracleContext(game, Target(1, 0, tuple(opponents)), LLMSession(client, 1, 0.8, 0),
                            MatchArena(game, sim, matches=1),
                            OracleConfig(samples=args.samples, max_tokens=args.max_tokens),
                            StoreLog(store, 1, 0, lambda kind, data: None))
        print(f"| {args.model} | valid / {args.samples} | beats | s/sample |\n|---|---|---|---|", flush=True)
        for style in args.styles.split(","):
            started = time.monotonic()
            valid, beats = run_style(style, ctx)
            print(f"| {style} | {valid} | {beats} | {(time.monotonic() - started) / args.samples:.0f} |", flush=True)
    client.close()


if __name__ == "__main__":
    main()
