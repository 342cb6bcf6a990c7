"""What a call costs: a dated price table per provider and model, a configuration override, and
the cost of one call from its token counts.

Prices are US dollars per million tokens: ``input`` (prompt tokens read fresh), ``output``
(completion tokens), ``cached_input`` (prompt tokens read from the provider's prompt cache)
and ``cache_write`` (prompt tokens written to the cache: Anthropic charges 1.25x input for
its 5-minute cache; the others nothing extra). Hennes et al. (arXiv 2603.10098) report no
cost; this accounting is ours.

Rules (our design):
- ``embedded``, ``files`` and ``replay`` cost 0 by definition: the model runs here, the
  replies are files, or the calls were paid for by the run that recorded them.
- a hosted model that is neither in ``PRICES`` nor priced by ``llm.prices`` costs *unknown*
  (``None``), never 0: a local OpenAI-compatible server (``llm.base_url``) is such a case.
- a model name matches a table entry exactly or followed by a date or ``-latest``
  (``claude-sonnet-4-20250514``, ``gpt-4o-2024-08-06``); any other variant (``o3-mini``,
  ``claude-sonnet-4-5``) is unknown rather than priced as its family.
- Gemini's context-cache *storage* (per token and hour) and its long-prompt tier (above
  200k tokens) are not priced: csro's prompts are far below 200k tokens and its caches
  live minutes.
"""

from __future__ import annotations

import dataclasses
import re

from csro.registry import PROVIDERS


@dataclasses.dataclass(frozen=True)
class Price:
    """US dollars per million tokens; ``cached_input``/``cache_write`` default to ``input``."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, tokens_in: int, tokens_out: int, tokens_cached: int = 0, tokens_cache_write: int = 0) -> float:
        """The dollars of one call; ``tokens_in`` counts every prompt token, cached ones included."""
        fresh = max(0, tokens_in - tokens_cached - tokens_cache_write)
        cached = self.input if self.cached_input is None else self.cached_input
        write = self.input if self.cache_write is None else self.cache_write
        return (fresh * self.input + tokens_out * self.output + tokens_cached * cached
                + tokens_cache_write * write) / 1e6


FREE = Price(0.0, 0.0, 0.0, 0.0)

# Source: the providers' public pricing pages (platform.openai.com/docs/pricing,
# www.anthropic.com/pricing, ai.google.dev/gemini-api/docs/pricing), standard (not batch)
# tier, as of 2025-10-15. Not re-checked since: override with ``llm.prices`` when they change.
PRICES_DATE = "2025-10-15"
PRICES: dict[tuple[str, str], Price] = {
    ("openai", "gpt-5"): Price(1.25, 10.00, 0.125),
    ("openai", "gpt-5-mini"): Price(0.25, 2.00, 0.025),
    ("openai", "gpt-5-nano"): Price(0.05, 0.40, 0.005),
    ("openai", "gpt-4.1"): Price(2.00, 8.00, 0.50),
    ("openai", "gpt-4.1-mini"): Price(0.40, 1.60, 0.10),
    ("openai", "gpt-4.1-nano"): Price(0.10, 0.40, 0.025),
    ("openai", "gpt-4o"): Price(2.50, 10.00, 1.25),
    ("openai", "gpt-4o-mini"): Price(0.15, 0.60, 0.075),
    ("openai", "o3"): Price(2.00, 8.00, 0.50),
    ("openai", "o4-mini"): Price(1.10, 4.40, 0.275),
    ("anthropic", "claude-opus-4"): Price(15.00, 75.00, 1.50, 18.75),
    ("anthropic", "claude-opus-4-1"): Price(15.00, 75.00, 1.50, 18.75),
    ("anthropic", "claude-sonnet-4"): Price(3.00, 15.00, 0.30, 3.75),
    ("anthropic", "claude-sonnet-4-5"): Price(3.00, 15.00, 0.30, 3.75),
    ("anthropic", "claude-haiku-4-5"): Price(1.00, 5.00, 0.10, 1.25),
    ("anthropic", "claude-3-7-sonnet"): Price(3.00, 15.00, 0.30, 3.75),
    ("anthropic", "claude-3-5-haiku"): Price(0.80, 4.00, 0.08, 1.00),
    ("gemini", "gemini-2.5-pro"): Price(1.25, 10.00, 0.31),
    ("gemini", "gemini-2.5-flash"): Price(0.30, 2.50, 0.075),
    ("gemini", "gemini-2.5-flash-lite"): Price(0.10, 0.40, 0.025),
    ("gemini", "gemini-2.0-flash"): Price(0.10, 0.40, 0.025),
}


def price_of(provider: str, model: str | None, override: Price | None = None) -> Price | None:
    """The price of ``provider``/``model``: the override, 0 for a provider whose class says it is
    ``free``, the table's entry, or None (unknown)."""
    if override is not None:
        return override
    if provider in PROVIDERS and PROVIDERS.load(provider).free:
        return FREE
    name = _SNAPSHOT.sub("", (model or "").lower().removeprefix("models/"))
    return PRICES.get((provider, name))


_SNAPSHOT = re.compile(r"-(\d{4}-?\d{2}-?\d{2}|latest)$")
