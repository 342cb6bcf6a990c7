"""``make_provider``: the provider that ``llm.provider`` names, built from the ``llm`` section of
the run configuration (``csro.config.LLMConfig``), with a one-line ``ConfigError`` naming the
field for anything missing or wrong.

API keys are read here, once, from the environment variable the configuration names
(``llm.api_key_env``); the configuration and the store only ever hold that variable's name.
"""

from __future__ import annotations

import os
import pathlib
from typing import Callable

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm._types import Provider
from csro.llm.anthropic import AnthropicProvider
from csro.llm.embedded import EmbeddedProvider
from csro.llm.files import FilesProvider
from csro.llm.gemini import GeminiProvider
from csro.llm.models import DEFAULT_MODEL, MODELS, ensure_model
from csro.llm.openai import OpenAIProvider
from csro.llm.replay import Lookup, ReplayProvider

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def make_provider(llm: LLMConfig, *, replay_lookup: Lookup | None = None) -> Provider:
    """The provider of ``llm``; ``replay_lookup`` serves ``replay`` (the recorded calls of an
    earlier run: the LLM layer opens no store, ``csro.recording.open_provider`` does)."""
    builder = _BUILDERS.get(llm.provider)
    if builder is None:
        raise ConfigError(f"llm.provider: unknown provider {llm.provider!r} (valid: {', '.join(_BUILDERS)})")
    return builder(llm, replay_lookup)


def replayed_run(llm: LLMConfig) -> pathlib.Path | None:
    """The directory of the earlier run whose recorded calls ``llm`` replays (None: not replay)."""
    if llm.provider != "replay":
        return None
    if llm.path is None:
        raise ConfigError("llm.path: the replay provider needs the directory of an earlier run")
    return pathlib.Path(llm.path)


def takes_images(llm: LLMConfig) -> bool:
    """Whether the configured provider is known to accept image parts: the hosted APIs
    (anthropic, gemini, openai without a ``base_url``); an OpenAI-compatible local server may
    not, and the other providers keep text only (``Message.images``)."""
    return llm.provider in ("anthropic", "gemini") or (llm.provider == "openai" and not llm.base_url)


def _embedded(llm: LLMConfig, _: Lookup | None) -> Provider:
    if llm.path is not None:
        path = pathlib.Path(llm.path).expanduser()
        if not path.is_file():
            raise ConfigError(f"llm.path: no GGUF model file at {path}")
        # The model's name is the file's unless the configuration names it (its default, the
        # configuration's `llm.model`, names the 1.5B and would mislabel any other file).
        named = "model" in llm.model_fields_set and llm.model
        return EmbeddedProvider(path, model=llm.model if named else path.stem, threads=llm.threads)
    name = llm.model or DEFAULT_MODEL
    path = ensure_model(name)  # refuses an unknown name
    return EmbeddedProvider(path, model=name, threads=llm.threads,
                            sampling=MODELS[name].sampling if llm.model_sampling else None)


def _openai(llm: LLMConfig, _: Lookup | None) -> Provider:
    # A local server (base_url set) needs no key unless one is named; OpenAI itself does.
    env = llm.api_key_env or (None if llm.base_url else DEFAULT_KEY_ENV["openai"])
    return OpenAIProvider(_model(llm), base_url=llm.base_url, key=_key(env) if env else None)


def _gemini(llm: LLMConfig, _: Lookup | None) -> Provider:
    return GeminiProvider(_model(llm), key=_key(llm.api_key_env or DEFAULT_KEY_ENV["gemini"]), base_url=llm.base_url,
                          cache=llm.prompt_cache)


def _anthropic(llm: LLMConfig, _: Lookup | None) -> Provider:
    return AnthropicProvider(_model(llm), key=_key(llm.api_key_env or DEFAULT_KEY_ENV["anthropic"]),
                             base_url=llm.base_url, cache=llm.prompt_cache)


def _files(llm: LLMConfig, _: Lookup | None) -> Provider:
    if llm.path is None:
        raise ConfigError("llm.path: the files provider needs a folder of replies")
    return FilesProvider(pathlib.Path(llm.path).expanduser())


def _replay(llm: LLMConfig, lookup: Lookup | None) -> Provider:
    if lookup is None:
        raise ConfigError("llm.path: the replay provider needs the recorded calls of an earlier run "
                          "(csro.recording.open_provider opens its store)")
    return ReplayProvider(lookup, model=llm.path or "replay")


def _model(llm: LLMConfig) -> str:
    if not llm.model:
        raise ConfigError(f"llm.model: the {llm.provider} provider needs a model name")
    return llm.model


def _key(env: str) -> str:
    key = os.environ.get(env)
    if not key:
        raise ConfigError(f"llm.api_key_env: environment variable {env} is not set")
    return key


_BUILDERS: dict[str, Callable[[LLMConfig, Lookup | None], Provider]] = {
    "embedded": _embedded, "openai": _openai, "gemini": _gemini, "anthropic": _anthropic,
    "files": _files, "replay": _replay,
}
