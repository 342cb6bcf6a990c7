"""A GBNF grammar of CFR-hook programs, for the embedded model's full rewrites.

The 0.5B default model copies its parent or writes code that does not run (measured in a
discovery run: of 6 free-form mutations, one copy of the parent and five unusable diffs).
Under this grammar a rewrite is a point in a family that spans the library's classic variants:
the regret update is vanilla, CFR+'s floored sum, or DCFR-style discounting with exponents the
model writes; the current policy is regret matching with an optimism weight (0 is regret
matching, 1 is predictive CFR+); the average is polynomial with a delay and an exponent. The
model chooses the form and writes the numbers and a one-line description; every sentence of
the grammar is a valid program. Like the CSRO grammar (``csro.oracles._grammar``) it removes
most of the model's authorship, so it is used only for the embedded provider's rewrites.
"""

from __future__ import annotations

from csro.gbnf import Rules, lit, to_gbnf

HEAD = "```python\nimport numpy as np\n\n\nclass Hooks:\n"

# tau^a / (tau^a + 1), tau = t + 1: DCFR's discount with an exponent the model writes twice
_DISCOUNT = [lit("((t + 1.0) ** "), "num", lit(" / ((t + 1.0) ** "), "num", lit(" + 1.0))")]

CFR_RULES: Rules = {
    "root": [["doc", "regret", "current", "average"]],
    "doc": [[lit('    """'), "[a-zA-Z0-9 ,.+()-]+", lit('"""\n')]],
    "regret": [[lit("\n    def update_accumulate_regret(self, block, t, regrets):\n        return "), "rexpr", lit("\n")]],
    "rexpr": [[lit("np.maximum(block.cumulative_regret + regrets, 0.0)")],
              [lit("block.cumulative_regret + regrets")],
              [lit("np.maximum(block.cumulative_regret * "), *_DISCOUNT,
               lit(" + regrets, 0.0)")],
              [lit("np.where(block.cumulative_regret > 0, block.cumulative_regret * "),
               *_DISCOUNT, lit(", block.cumulative_regret * "),
               *_DISCOUNT, lit(") + regrets")]],
    "current": [[lit("\n    def get_updated_current_policy(self, block, t, regrets, previous_policy):\n"
                     "        weights = np.maximum(block.cumulative_regret + "), "num",
                 lit(" * regrets, 0.0) * block.legal\n"
                     "        total = weights.sum(axis=1, keepdims=True)\n"
                     "        uniform = block.legal / block.legal.sum(axis=1, keepdims=True)\n"
                     "        return np.where(total > 0, weights / np.where(total > 0, total, 1.0), uniform)\n")]],
    "average": [[lit("\n    def update_accumulate_policy(self, block, t, policy, regrets, reach, cf_reach):\n"
                     "        if t < "), "int", lit(":\n            return block.cumulative_policy\n"
                                               "        return block.cumulative_policy + ((t + 1.0) ** "), "num",
                 lit(" * reach)[:, None] * policy\n")]],
    "num": [["[0-9]", "frac?"]],
    "frac": [[lit("."), "[0-9]", "[0-9]?"]],
    "int": [["[0-9]", "[0-9]?", "[0-9]?"]],
}


def cfr_grammar() -> tuple[str, str]:
    """``(prefill, gbnf)`` of a grammar-constrained CFR-hook rewrite."""
    return HEAD, to_gbnf(CFR_RULES)
