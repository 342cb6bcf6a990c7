"""The LLM layer: one provider protocol, a client that adds concurrency, retries and recording,
and the providers ``embedded``, ``openai``, ``gemini``, ``anthropic``, ``files``, ``replay``
(see docs/llm.md). Hennes et al. (arXiv 2603.10098) query an LLM as the best-response oracle;
everything here is the plumbing that makes those queries reproducible.
"""

from csro.llm._client import LLMClient
from csro.llm._factory import make_provider, takes_images
from csro.llm._types import CallKey, LLMReply, LLMRequest, Message, Provider
from csro.errors import ProviderError
from csro.llm.models import DEFAULT_MODEL, MODELS, ensure_model
from csro.llm.session import Completer, LLMSession

__all__ = ["CallKey", "Completer", "DEFAULT_MODEL", "LLMClient", "LLMReply", "LLMRequest", "LLMSession", "MODELS", "Message",
           "Provider", "ProviderError", "ensure_model", "make_provider", "takes_images"]
