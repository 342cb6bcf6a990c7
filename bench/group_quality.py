"""Are samples decoded together as good as samples decoded one by one? (issue 26, item 3)

    python bench/group_quality.py [--model qwen2.5-coder-1.5b] [--rewrites 16] [--matches 2]
                                  [--threads 1] [--seed 0]

A row's logits depend on the other rows of its batch (``bench/decode_rows.py``), so
``EmbeddedProvider.complete_group`` writes other samples than ``complete`` for the same
requests. That should change which programs are drawn, not how good they are. This bench
checks it on the calls ``make demo`` makes: evolve's ``--rewrites`` rewrites of its seed (the
game's worked example) under the RRPS rule grammar, built by the loop's own ``Evolve`` for
``bench/valid_rate.py``'s best response (sigma over three code opponents) and captured before
any is decoded. The same requests are then decoded one by one (``complete``) and in groups
(``complete_group``: 4 at a time), by one provider, in the same run. Each reply's program is
checked in the sandbox and, when valid, played against the 43 RoShamBo bots (``--matches`` a
cell, the real sandbox), as the run's end-of-run evaluation does.

Printed per decoding: valid and distinct programs of the requests, the mean AggScore of the
valid programs with its 95% interval (Student t over programs) and the best; then the difference of the two means with a Welch 95% interval.
An interval that holds 0 says the grouped samples are not measurably worse or better.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time

from valid_rate import oracle_context, rrps_opponents

from csro.config import OracleConfig
from csro.evaluation import evaluate
from csro.evaluation.backends import LocalBackend
from csro.evaluation.policy_ref import code_policy, resolve
from csro.extract import extract_code, program_id
from csro.games import load_game
from csro.llm import LLMClient, LLMRequest, ProviderError, ensure_model
from csro.llm.embedded import EmbeddedProvider
from csro.oracles.evolve import Evolve
from csro.policies import SandboxLimits
from csro.reproduce import mean_ci
from csro.simulate import StoredSimulator
from csro.store import RunStore
from scipy import stats

TIMEOUT_S = 1800.0
DECODINGS = (("one by one (complete)", False), ("grouped (complete_group)", True))  # label, grouped


class Capture:
    """A provider that records the requests it is sent and answers none (the oracle then keeps
    its seed): the rewrite requests exactly as ``Evolve`` makes them."""

    name, model, max_concurrency, grammar = "embedded", "capture", 1, True

    def __init__(self):
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest, timeout_s: float):
        self.requests.append(request)
        raise ProviderError("captured, not decoded", retryable=False)

    def close(self) -> None:
        pass


def rewrite_requests(ctx) -> list[LLMRequest]:
    """Evolve's first generation of grammar rewrites of its seed, as ``make demo`` sets it up."""
    capture = Capture()
    Evolve().best_response(dataclasses.replace(ctx, llm=dataclasses.replace(ctx.llm, client=LLMClient(capture, concurrency=1))))
    return capture.requests


def decode(provider: EmbeddedProvider, requests: list[LLMRequest], grouped: bool) -> list[str | None]:
    """Each request's program (None: the reply held none or failed)."""
    if grouped:
        replies = provider.complete_group(requests, TIMEOUT_S)
    else:
        replies = []
        for request in requests:
            try:
                replies.append(provider.complete(request, TIMEOUT_S))
            except ProviderError as exc:
                replies.append(exc)
    programs = []
    for reply in replies:
        code = None if isinstance(reply, ProviderError) else extract_code(reply.full_text, "Agent").source
        programs.append(code or None)
    return programs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--rewrites", type=int, default=16, help="rewrite requests (decoded both ways)")
    ap.add_argument("--matches", type=int, default=2, help="matches per (program, bot) cell")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0, help="the run seed the requests are made with")
    args = ap.parse_args()

    game = load_game("rrps")
    config = OracleConfig(prompt="scaffold", max_tokens=512, max_repairs=1,
                          context={"opponents": "code", "filter": "top_k", "k": 3},
                          evolve={"islands": 1, "population_size": args.rewrites, "generations": 1,
                                  "diff_ratio": 0.0, "overlap": False, "rewrite_grammar": True})
    with tempfile.TemporaryDirectory() as tmp, RunStore.create(f"{tmp}/run", {}) as store:
        sim = StoredSimulator(game, store, LocalBackend(), seed=args.seed, limits=SandboxLimits())
        ctx = oracle_context(game, rrps_opponents(game), None, sim, config, matches=1, temperature=0.8, seed=args.seed)
        requests = rewrite_requests(ctx)
        run(args, game, ctx.arena, requests)


def run(args: argparse.Namespace, game, arena, requests: list[LLMRequest]) -> None:
    """Decode ``requests`` both ways, check and play their programs, print the table."""
    print(f"{len(requests)} rewrite requests captured (prompt shared: "
          f"{len({(r.messages, r.prefill) for r in requests}) == 1}); decoding one by one, then grouped ...", flush=True)
    provider = EmbeddedProvider(ensure_model(args.model), model=args.model, threads=args.threads)
    decoded = {label: decode(provider, requests, grouped) for label, grouped in DECODINGS}
    provider.close()

    specs, owners = [], []
    for (label, grouped), programs in zip(DECODINGS, decoded.values()):
        errors = arena.check([p or "" for p in programs])
        for i, (code, error) in enumerate(zip(programs, errors)):
            if code is not None and error is None:
                specs.append(code_policy(f"{'g' if grouped else 's'}{i}", code, game))
                owners.append(label)
    opponents = [resolve(ref, game) for ref in game.population()]
    print(f"playing {len(specs)} programs against {len(opponents)} bots, {args.matches} matches a cell ...", flush=True)
    started = time.monotonic()
    result = evaluate(game, specs, opponents, matches=args.matches, seed=args.seed)
    print(f"played in {time.monotonic() - started:.0f} s\n")

    print(f"{args.model}, {args.threads} thread(s), {len(requests)} grammar rewrites of the worked example, "
          f"{args.matches} matches a cell")
    print("| decoding | valid / requests | distinct | mean AggScore (95% CI) | best AggScore |")
    print("|---|---|---|---|---|")
    agg = {}
    for label, programs in decoded.items():
        scores = [s for s, owner in zip(result.scores, owners) if owner == label]
        agg[label] = [s.agg_score for s in scores]
        distinct = len({program_id(p) for p in programs if p is not None})
        quality = "- | -"  # no valid program
        if agg[label]:
            mean, half = mean_ci(agg[label], 0.0)
            quality = f"{mean:.1f} ± {half:.1f} | {max(agg[label]):.1f}"
        print(f"| {label} | {len(agg[label])} / {len(programs)} | {distinct} | {quality} |")
    one, group = agg.values()
    if min(len(one), len(group)) < 2:
        print("\nfewer than two valid programs in a decoding: no difference of means to test")
        return
    welch = stats.ttest_ind(group, one, equal_var=False)
    diff = statistics.mean(group) - statistics.mean(one)
    ci = welch.confidence_interval(0.95)
    print(f"\ngrouped - one by one: mean AggScore {diff:+.1f} (95% CI {ci.low:+.1f} .. {ci.high:+.1f}, Welch p = {welch.pvalue:.2f})")


if __name__ == "__main__":
    main()
