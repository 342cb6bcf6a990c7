"""The public surface of csro.llm (other modules code against exactly this)."""

from __future__ import annotations

import pytest

import csro.llm
from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm import make_provider


def test_the_exported_names():
    assert sorted(csro.llm.__all__) == [
        "CallKey", "Completer", "DEFAULT_MODEL", "LLMClient", "LLMReply", "LLMRequest",
        "LLMSession", "Limits", "MODELS", "Message", "Meter", "PRICES", "PRICES_DATE", "Price", "Provider", "ProviderError",
        "ROLES", "approx_prompt_tokens", "approx_tokens", "ensure_model", "last_stop", "make_provider", "meter_for",
        "price_of", "replayed_run", "role_of", "stop_event", "takes_images", "usage", "waiting"]
    assert all(hasattr(csro.llm, name) for name in csro.llm.__all__)


def test_an_unknown_provider_is_a_config_error_listing_the_valid_ones():
    config = LLMConfig.model_construct(**{**LLMConfig().model_dump(), "provider": "gpt"})
    with pytest.raises(ConfigError, match="^llm.provider: unknown provider 'gpt' "
                                          r"\(valid: embedded, openai, gemini, anthropic, files, replay\)$"):
        make_provider(config)
