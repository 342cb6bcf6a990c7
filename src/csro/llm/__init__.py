"""The LLM layer: one provider protocol, a client that adds concurrency, retries and recording,
and the providers ``embedded``, ``openai``, ``gemini``, ``anthropic``, ``files``, ``replay``
(see docs/llm.md); what calls cost, the run's budget and the estimate before a run
(docs/cost.md). Hennes et al. (arXiv 2603.10098) query an LLM as the best-response oracle;
everything here is the plumbing that makes those queries reproducible and affordable.
"""

from csro.llm._client import LLMClient
from csro.errors import ProviderError
from csro.llm._factory import make_provider, replayed_run, takes_images
from csro.llm._types import CallKey, LLMReply, LLMRequest, Message, Provider
from csro.llm.budget import Limits, Meter, meter_for, stop_reason
from csro.llm.models import DEFAULT_MODEL, MODELS, ensure_model
from csro.llm.prices import FREE_PROVIDERS, PRICES, PRICES_DATE, Price, price_of
from csro.llm.roles import ROLES, role_of
from csro.llm.session import Completer, LLMSession
from csro.llm.tokens import approx_prompt_tokens, approx_tokens
from csro.llm.usage import usage

__all__ = ["CallKey", "Completer", "DEFAULT_MODEL", "FREE_PROVIDERS", "LLMClient", "LLMReply",
           "LLMRequest", "LLMSession", "Limits", "MODELS", "Message", "Meter", "PRICES", "PRICES_DATE", "Price",
           "Provider", "ProviderError", "ROLES", "approx_prompt_tokens", "approx_tokens", "ensure_model",
           "make_provider", "meter_for", "price_of", "replayed_run", "role_of", "stop_reason", "takes_images", "usage"]
