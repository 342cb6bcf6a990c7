"""The LLM layer: one provider protocol, a client that adds concurrency, retries and recording,
and the providers ``embedded``, ``openai``, ``gemini``, ``anthropic``, ``files``, ``replay``
(see docs/llm.md); what calls cost, the run's budget and the estimate before a run
(docs/cost.md). Hennes et al. (arXiv 2603.10098) query an LLM as the best-response oracle;
everything here is the plumbing that makes those queries reproducible and affordable.

Each name is imported from its module when first used (``csro._lazy``): a store reading
recorded calls does not load the providers.
"""

from csro._lazy import lazy_package

_EXPORTS = {
    "LLMClient": "csro.llm._client",
    "ProviderError": "csro.errors",
    **dict.fromkeys(("make_provider", "replayed_run", "takes_images"), "csro.llm._factory"),
    **dict.fromkeys(("CallKey", "LLMReply", "LLMRequest", "Message", "Provider"), "csro.llm._types"),
    **dict.fromkeys(("Limits", "Meter", "last_stop", "meter_for", "stop_event"), "csro.llm.budget"),
    **dict.fromkeys(("DEFAULT_MODEL", "MODELS", "ensure_model"), "csro.llm.models"),
    **dict.fromkeys(("PRICES", "PRICES_DATE", "Price", "price_of"), "csro.llm.prices"),
    "ROLES": "csro.config",
    "role_of": "csro.llm.roles",
    **dict.fromkeys(("Completer", "LLMSession"), "csro.llm.session"),
    **dict.fromkeys(("approx_prompt_tokens", "approx_tokens"), "csro.llm.tokens"),
    **dict.fromkeys(("usage", "waiting"), "csro.llm.usage"),
}
__all__ = lazy_package(__name__, _EXPORTS)
