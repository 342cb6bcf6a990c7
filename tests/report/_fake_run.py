"""A small fake run, written through the store's API: 3 policies (one hostile), sigmas,
matches, LLM calls (one failed; priced as claude-sonnet-4 with 10000 of 12000 prompt tokens
cached: $0.015 each), events, per-iteration metrics and a final evaluation."""

from __future__ import annotations

import hashlib

from csro.evaluation.runner import MatchResult
from csro.llm import CallKey, LLMReply, LLMRequest, Message, price_of
from csro.store import PolicyRecord, RunStore, SigmaRecord

SCRIPT = "<script>alert(1)</script>"
IMG = "</pre><img src=x onerror=alert(2)>"
# terminal escapes: window title (OSC 0), clipboard (OSC 52), CSI, C1 CSI/OSC, bidi override
TERMINAL = "\x1b]0;PWNED\x07\x1b]52;c;UFdORUQ=\x07\x1b[2J\x9b31m\x9d0;T\x9c\u202edetsurt\u202c"
HOSTILE_SOURCE = f'''class Policy:
    """Beats the mixture. {IMG} {SCRIPT}"""

    def act(self, observation):
        return "{SCRIPT}"
'''
FREQUENCY_SOURCE = '''class Policy:
    """Plays the counter to the opponent's most frequent move."""

    def __init__(self):
        self.counts = {"R": 0, "P": 0, "S": 0}

    def act(self, observation):
        return "P"
'''
CONFIG = {"game": "rrps", "iterations": 2, "meta_solver": "nash", "oracle": {"kind": "linear_refinement"},
          "llm": {"provider": "files", "model": "canned", "api_key_env": None}}
BOTS = ["greenberg", "iocainebot", "<b>bold</b>bot"] + [f"bot{i:02d}" for i in range(40)]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _call(iteration: int, step: str, reply: str, error: str | None = None) -> tuple[LLMRequest, LLMReply]:
    key = CallKey(iteration, step)
    request = LLMRequest(key, (Message("system", "You write RRPS policies."),
                               Message("user", f"Opponents: p0. Beat them {SCRIPT}")),
                         prefill="```python\n", stop=("```",), max_tokens=512, temperature=0.8, seed=7)
    tokens = (0, 0, 0) if error else (12000, 400, 10000)
    cost = price_of("anthropic", "claude-sonnet-4").cost(tokens[0], tokens[1], tokens[2])
    return request, LLMReply(key, "" if error else reply, "anthropic", "claude-sonnet-4", tokens[0], tokens[1], 1.25,
                             3 if error else 1, error, request.prefill, tokens_cached=tokens[2], cost_usd=cost)


def populate(store: RunStore) -> None:
    calls = [_call(1, "propose", FREQUENCY_SOURCE), _call(2, "propose", "", error="HTTP 503 after 3 attempts"),
             _call(2, "repair-0-1", HOSTILE_SOURCE), _call(2, "refine-1", HOSTILE_SOURCE)]
    for q, r in calls:
        store.add_llm_call(q, r)
    store.add_policy(PolicyRecord("p0", 0, 0, "initial", None, "builtin:random", None, None))
    store.add_policy(PolicyRecord("p1", 0, 1, "zero_shot", FREQUENCY_SOURCE, None, _sha(FREQUENCY_SOURCE), None,
                                  ("1/propose/0",), {"utility": 0.31, "reason": "best of 1 sample"}))
    store.add_policy(PolicyRecord("p2", 0, 2, "linear_refinement", HOSTILE_SOURCE, None, _sha(HOSTILE_SOURCE), "p1",
                                  ("2/repair-0-1/0", "2/refine-1/0", "9/missing/0"),
                                  {"utility": 0.12, "reason": f"refined {SCRIPT}", "attempts": [{"ok": False}]}))
    names = ["p0", "p1", "p2"]
    matches = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for m in range(4):
                r = 0.1 * (m + 1) * (names.index(b) - i)
                matches.append(MatchResult((a, b) if m % 2 == 0 else (b, a), (r, -r) if m % 2 == 0 else (-r, r), m))
    store.add_matches("meta", matches)
    for k in range(3):
        sigma = [[1.0], [0.2, 0.8], [0.1, 0.3, 0.6]][k]
        store.add_sigma(SigmaRecord(k, 0, tuple(names[:k + 1]), tuple(sigma), "nash", 0.05 / (k + 1)))
        store.mark_iteration(k, {"pop_return": -0.5 + 0.3 * k, "pop_expl": 0.9 - 0.3 * k, "agg_score": -1.4 + 0.6 * k,
                                 "ci95": {"pop_return": 0.05, "pop_expl": 0.1, "agg_score": 0.11},
                                 "meta_nash_conv": 0.05 / (k + 1), "population_size": k + 1, "seconds": 3.5})
    store.add_event(1, "iteration_start", {"population": 1})
    store.add_event(2, "oracle_rejected", {"reason": f"forfeited 3 of 4 matches {IMG}", "utility": -1.0})
    store.add_event(2, "oracle_rejected", {"reason": f"exception: ValueError: {TERMINAL}", "utility": -1.0})
    store.add_event(2, "duplicate", {"of": "p1", "reason": "same program"})
    store.set_final({"pop_return": 0.1, "pop_expl": 0.3, "agg_score": -0.2,
                     "ci95": {"pop_return": 0.02, "pop_expl": 0.04, "agg_score": 0.045},
                     "nash_conv": None, "nash_conv_note": "not computed for RRPS (too large)",
                     "per_opponent": {b: (i % 7 - 3) / 10 for i, b in enumerate(BOTS)},
                     "matches_per_opponent": 10, "population": names, "sigma": {"p0": 0.1, "p1": 0.3, "p2": 0.6}})
