"""``make_provider``: the provider that ``llm.provider`` names, built from the ``llm`` section of
the run configuration (``csro.config.LLMConfig``), with a one-line ``ConfigError`` naming the
field for anything missing or wrong.

API keys are read here, once, from the environment variable the configuration names
(``llm.api_key_env``); the configuration and the store only ever hold that variable's name.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
from typing import Callable, Iterator

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm._client import LLMClient
from csro.llm._types import Provider
from csro.llm.budget import meter_for
from csro.llm.prices import Price, price_of
from csro.llm.anthropic import AnthropicProvider
from csro.llm.embedded import EmbeddedProvider
from csro.llm.files import FilesProvider
from csro.llm.gemini import GeminiProvider
from csro.llm.models import DEFAULT_MODEL, MODELS, ensure_model
from csro.llm.openai import OpenAIProvider
from csro.llm.replay import Lookup, ReplayProvider

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def make_provider(llm: LLMConfig, *, replay_lookup: Lookup | None = None) -> Provider:
    """The provider of ``llm``; ``replay_lookup`` serves ``replay`` (else it opens ``llm.path``)."""
    builder = _BUILDERS.get(llm.provider)
    if builder is None:
        raise ConfigError(f"llm.provider: unknown provider {llm.provider!r} (valid: {', '.join(_BUILDERS)})")
    return builder(llm, replay_lookup)


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
    if lookup is not None:
        return ReplayProvider(lookup, model=llm.path or "replay")
    if llm.path is None:
        raise ConfigError("llm.path: the replay provider needs the directory of an earlier run")
    from csro.store import RunStore, StoreError  # the store imports the LLM types: import it late

    try:
        store = RunStore.open(llm.path)
    except StoreError as exc:
        raise ConfigError(f"llm.path: {exc}") from None
    return ReplayProvider(store.llm_call, model=llm.path, on_close=store.close)


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


@contextlib.contextmanager
def run_client(llm: LLMConfig, store) -> Iterator[LLMClient]:
    """A run's LLM client: every call recorded in ``store`` (a run, AOR or training store),
    recorded calls served from it, priced and capped by ``llm.budget``."""
    if llm.provider == "replay" and llm.path is not None and \
            pathlib.Path(llm.path).resolve() == store.directory.resolve():
        raise ConfigError("llm.path: a run cannot replay itself (resume it instead)")
    provider = make_provider(llm)  # replay opens the earlier run's store itself
    override = Price(**llm.prices.model_dump()) if llm.prices is not None else None
    try:
        meter = meter_for(price_of(provider.name, provider.model, override), llm.budget)
    except ConfigError:
        provider.close()
        raise
    client = LLMClient(provider, concurrency=llm.concurrency, timeout_s=llm.timeout_s, retries=llm.retries,
                       backoff_s=llm.backoff_s, recorder=store.add_llm_call, recorded=store.llm_call, meter=meter)
    try:
        # The files provider hands out replies in submission order: give it the calls already made.
        on_submit = getattr(provider, "on_submit", None)
        if on_submit is not None:
            for request, _ in store.llm_calls():
                on_submit(request.key)
        yield client
    finally:
        client.close()
