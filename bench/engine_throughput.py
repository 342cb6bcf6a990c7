"""Distinct valid candidates per CPU-minute of the embedded engine, on the calls of a real CSRO iteration.

    python bench/engine_throughput.py [--model qwen2.5-coder-1.5b] [--samples 3] [--repairs 1]
                                      [--rewrites 2] [--generations 1] [--free-rewrites] [--max-tokens 320]
                                      [--threads 1] [--modes reset:512:old,reuse:64,group:64]

The workload is the loop's own code on ``bench/valid_rate.py``'s RRPS best response (sigma over
three code opponents), with ``make demo``'s prompt settings (scaffold prefill, opponents as
code, top 3): first ``Proposer.generate`` — ``--samples`` samples of the real context, their
repairs (``--repairs`` rounds) and, if none is valid, the grammar fallback (``--samples 0``
skips this part); then ``Evolve().best_response`` — ``--generations`` generations of
``--rewrites`` rewrites each, from its seed, the game's worked example (decoded under the RRPS
rule grammar as in ``make demo``; ``--free-rewrites`` without it). ``make demo``'s own best
response is ``--samples 0`` with its ``oracle.evolve`` sizes (``population_size`` rewrites a
generation).

Each mode runs the whole workload in a child process of its own (a cold model, its own peak
memory), one after the other; a mode is ``reset:N`` (every prompt evaluated from its first
token, batches of N tokens), ``reuse:N`` (prefix reuse in batches of N, ``csro.llm.embedded``,
one request at a time) or ``group:N`` (reuse, and the requests of one ``complete_many`` that
share a prompt decoded together as parallel sequences, ``EmbeddedProvider.complete_group``),
with ``:old`` when the grammar is sampled as before issue 26 (llama.cpp's default top-k,
top-p and min-p cut its distribution, at the run's temperature, not evolve's
``grammar_temperature``). ``reset:512:old`` is the engine before issue 26, the reference, and
comes first. With the same N and sampling, reset and reuse write the same text (that is the
construction), so they make the same calls and the same candidates and their ratio is the
engine's alone (``group`` writes other text: a sample's logits depend on its batch); another N changes the text, and so does the sampling (which is the point of
changing it: distinct samples).

Per mode: LLM calls; prompt tokens and how many came from the cache; completion tokens;
prefill seconds (the prompt: the provider's evaluation of more than one token) and generation seconds
(the rest of each call); CPU seconds of the process and its
children (the sandbox); valid candidates and the distinct ones (``csro.extract.program_id``,
the seed excluded) per calls made; distinct valid candidates per CPU-minute; peak RSS. The
ratio lines divide each mode by the first. While a mode runs, each call prints a progress line
(calls done, the calls expected — the reference's count, once known — and an estimated time left).
The machine's load changes the seconds, not the ratio's meaning: report it with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import pathlib
import resource
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from valid_rate import oracle_context, rrps_opponents

from csro.arena import MatchArena
from csro.config import OracleConfig
from csro.evaluation.backends import LocalBackend
from csro.extract import program_id
from csro.games import load_game
from csro.llm import LLMClient, LLMReply, LLMRequest, ensure_model
from csro.llm.embedded import EmbeddedProvider
from csro.oracles._context import ContextBuilder
from csro.oracles._propose import Proposer
from csro.oracles.evolve import Evolve
from csro.policies import SandboxLimits
from csro.simulate import StoredSimulator
from csro.store import RunStore

class Timed:
    """The provider, with each completion's prefill and generation seconds and a progress line
    per call. Prefill is the time in the provider's ``_llama.eval`` over more than one token (the
    prompt; a bench-only look inside the provider), generation the rest of the call (wall
    seconds on a single-threaded engine, so close to its CPU seconds)."""

    def __init__(self, provider: EmbeddedProvider, mode: str, expected: int | None):
        self.provider, self.mode, self.expected = provider, mode, expected
        self.name, self.model = provider.name, provider.model
        self.max_concurrency, self.grammar = provider.max_concurrency, provider.grammar
        self.calls: list[dict] = []
        self.started = time.monotonic()
        self._prefill = 0.0

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        started, self._prefill = time.monotonic(), 0.0
        with self._timing_eval():
            reply = self.provider.complete(request, timeout_s)
        self._add([request], [reply], time.monotonic() - started)
        return reply

    def close(self) -> None:
        self.provider.close()

    def _add(self, requests: Sequence[LLMRequest], replies: Sequence, seconds: float) -> None:
        """One completion or group: its prefill and generation seconds shared by its calls."""
        share = 1 / len(requests)
        for request, reply in zip(requests, replies):
            ok = isinstance(reply, LLMReply)
            self.calls.append({"key": str(request.key), "tokens_in": reply.tokens_in if ok else 0,
                               "cached": reply.tokens_cached if ok else 0, "tokens_out": reply.tokens_out if ok else 0,
                               "prefill_s": self._prefill * share, "generate_s": (seconds - self._prefill) * share})
            self._progress(request, reply if ok else None)

    @contextlib.contextmanager
    def _timing_eval(self):
        self.provider._load()
        llama = self.provider._llama
        evaluate = llama.eval

        def timed(tokens):
            started = time.monotonic()
            evaluate(tokens)
            if len(tokens) > 1:
                self._prefill += time.monotonic() - started

        llama.eval = timed
        try:
            yield
        finally:
            del llama.eval

    def _progress(self, request: LLMRequest, reply: LLMReply | None) -> None:
        done, elapsed = len(self.calls), time.monotonic() - self.started
        left = f", ~{(self.expected - done) * elapsed / done / 60:.1f} min left" if self.expected and self.expected > done else ""
        of = f"/{self.expected}" if self.expected else ""  # the reference's count, once it has run
        what = f"{reply.tokens_in} in ({reply.tokens_cached} cached), {reply.tokens_out} out" if reply else "failed"
        print(f"  [{self.mode}] call {done}{of} {request.key}: {what}, {elapsed / 60:.1f} min so far{left}",
              file=sys.stderr, flush=True)


class TimedGroups(Timed):
    """``Timed`` for the modes that decode the samples of one request together."""

    def complete_group(self, requests: Sequence[LLMRequest], timeout_s: float) -> list:
        started, self._prefill = time.monotonic(), 0.0
        with self._timing_eval():
            replies = self.provider.complete_group(requests, timeout_s)
        self._add(requests, replies, time.monotonic() - started)
        return replies


MODES = {"reset": (False, Timed), "reuse": (True, Timed), "group": (True, TimedGroups)}  # -> reuse_prefix, wrapper


class Checked:
    """The run's arena, keeping every program it was asked to check and the verdict."""

    def __init__(self, arena: MatchArena):
        self.arena, self.matches = arena, arena.matches
        self.verdicts: list[tuple[str, str | None]] = []

    def check(self, sources: Sequence[str], seat: int | None = None) -> list[str | None]:
        errors = self.arena.check(sources, seat)
        self.verdicts += zip(sources, errors)
        return errors

    def __getattr__(self, name: str):  # evaluate, play, trace: the arena's own
        return getattr(self.arena, name)


def workload(args: argparse.Namespace, mode: str) -> dict:
    """One mode's run of the workload (in this process); its figures."""
    game = load_game("rrps")
    kind, n_batch, *sampling = mode.split(":")
    old = sampling == ["old"]
    reuse, wrapper = MODES[kind]
    provider = EmbeddedProvider(ensure_model(args.model), model=args.model, threads=args.threads,
                                n_batch=int(n_batch), reuse_prefix=reuse, truncate_grammar=old)
    timed = wrapper(provider, mode, args.expected)
    client = LLMClient(timed, concurrency=1)
    config = OracleConfig(samples=max(args.samples, 1), max_repairs=args.repairs, prompt="scaffold", max_tokens=args.max_tokens,
                          context={"opponents": "code", "filter": "top_k", "k": 3},
                          evolve={"islands": 1, "population_size": args.rewrites, "generations": args.generations,
                                  "diff_ratio": 0.0,
                                  "overlap": False, "rewrite_grammar": not args.free_rewrites,
                                  **({"grammar_temperature": None} if old else {})})
    with tempfile.TemporaryDirectory() as tmp, RunStore.create(f"{tmp}/run", {}) as store:
        sim = StoredSimulator(game, store, LocalBackend(), seed=0, limits=SandboxLimits())
        ctx = oracle_context(game, rrps_opponents(game), client, sim, config, matches=args.matches,
                             temperature=args.temperature, seed=args.seed)
        checked = Checked(ctx.arena)
        ctx = dataclasses.replace(ctx, arena=checked)
        cpu = _cpu()
        if args.samples:
            Proposer(ctx).generate("propose", ContextBuilder().messages(game, list(ctx.target.opponents), config), 0)
        Evolve().best_response(ctx)
        cpu = _cpu() - cpu
    client.close()
    seed = program_id(game.example_policy)
    valid = [program_id(s) for s, e in checked.verdicts if e is None and program_id(s) != seed]
    return {"mode": mode, "calls": timed.calls, "checked": len(checked.verdicts),
            "distinct_checked": len({program_id(s) for s, _ in checked.verdicts} - {seed}),
            "valid": len(valid), "distinct_valid": len(set(valid)), "cpu_s": cpu,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the sandbox's processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def row(r: dict) -> dict:
    calls = r["calls"]
    per_minute = r["distinct_valid"] / (r["cpu_s"] / 60) if r["cpu_s"] else 0.0
    return {"mode": r["mode"], "calls": len(calls),
            "prompt tok (cached)": f"{sum(c['tokens_in'] for c in calls)} ({sum(c['cached'] for c in calls)})",
            "completion tok": sum(c["tokens_out"] for c in calls),
            "prefill s": f"{sum(c['prefill_s'] for c in calls):.1f}", "generate s": f"{sum(c['generate_s'] for c in calls):.1f}",
            "CPU s": f"{r['cpu_s']:.1f}", "valid (distinct) / calls": f"{r['valid']} ({r['distinct_valid']}) / {len(calls)}",
            "distinct valid per CPU-min": f"{per_minute:.2f}", "peak RSS MiB": f"{r['peak_rss_mib']:.0f}",
            "_per_minute": per_minute, "_prefill": sum(c["prefill_s"] for c in calls), "_cpu": r["cpu_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--samples", type=int, default=3, help="samples of the proposal")
    parser.add_argument("--repairs", type=int, default=1, help="repair rounds of the proposal")
    parser.add_argument("--rewrites", type=int, default=2, help="evolve rewrites a generation")
    parser.add_argument("--generations", type=int, default=1, help="evolve generations")
    parser.add_argument("--free-rewrites", action="store_true", help="rewrites without the rule grammar")
    parser.add_argument("--max-tokens", type=int, default=320)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--matches", type=int, default=2, help="matches per opponent when a candidate is played")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", default="reset:512:old,reuse:64,group:64",
                        help="reset:N, reuse:N or group:N, :old to sample the grammar as before issue 26; the reference first")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--expected", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(workload(args, args.child)))
        return
    rows, expected = [], None
    for mode in args.modes.split(","):
        print(f"{mode}: running ...", file=sys.stderr, flush=True)
        argv = [a for a in sys.argv[1:]] + ["--child", mode] + (["--expected", str(expected)] if expected else [])
        out = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), *argv], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        expected = expected or len(result["calls"])
        rows.append(row(result))
    print(f"{args.model}, {args.threads} thread(s), temperature {args.temperature:g}, seed {args.seed}; "
          f"{args.samples} samples + {args.repairs} repair round(s) + {args.generations} x {args.rewrites} "
          f"{'free' if args.free_rewrites else 'grammar'} rewrites, max {args.max_tokens} tokens")
    heads = [h for h in rows[0] if not h.startswith("_")]
    print("| " + " | ".join(heads) + " |\n|" + "---|" * len(heads))
    for r in rows:
        print("| " + " | ".join(str(r[h]) for h in heads) + " |")
    for r in rows[1:]:
        gain = f"x{r['_per_minute'] / rows[0]['_per_minute']:.2f}" if rows[0]["_per_minute"] else "- (none in the reference)"
        print(f"ratio {r['mode']} / {rows[0]['mode']}: distinct valid per CPU-minute {gain}, CPU seconds "
              f"x{r['_cpu'] / rows[0]['_cpu']:.2f}, prefill seconds x{r['_prefill'] / max(rows[0]['_prefill'], 1e-9):.2f}")


if __name__ == "__main__":
    main()
