"""``make_provider``: the provider that ``llm.provider`` names (``csro.registry.PROVIDERS``),
built by its class from the ``llm`` section of the run configuration (``csro.config.LLMConfig``;
``Provider.from_config``), with a one-line ``ConfigError`` naming the field for anything
missing or wrong.

API keys are read by the hosted providers' ``from_config``, once, from the environment
variable the configuration names (``llm.api_key_env``); the configuration and the store only
ever hold that variable's name.
"""

from __future__ import annotations

import pathlib

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm._types import Provider
from csro.llm.replay import Lookup
from csro.registry import PROVIDERS


def make_provider(llm: LLMConfig, *, replay_lookup: Lookup | None = None) -> Provider:
    """The provider of ``llm``; ``replay_lookup`` serves ``replay`` (the recorded calls of an
    earlier run: the LLM layer opens no store, ``csro.recording.open_provider`` does)."""
    return PROVIDERS.load(llm.provider).from_config(llm, replay_lookup)


def replayed_run(llm: LLMConfig) -> pathlib.Path | None:
    """The directory of the earlier run whose recorded calls ``llm`` replays (None: not replay)."""
    if llm.provider != "replay":
        return None
    if llm.path is None:
        raise ConfigError("llm.path: the replay provider needs the directory of an earlier run")
    return pathlib.Path(llm.path)


def takes_images(llm: LLMConfig) -> bool:
    """Whether the configured provider accepts image parts (its class's ``takes_images``: the
    hosted APIs, openai without a ``base_url``); the others keep text only (``Message.images``)."""
    return PROVIDERS.load(llm.provider).takes_images(llm)
