"""Registries: what a configuration may name, one row per game, oracle kind or provider.

A row is a ``"module:attribute"`` path, imported the first time the row is used (so a command
loads only what it uses), or the object itself (a row registered at run time, e.g. a game, an
oracle or a provider a test module defines). Adding one is one module plus one row here, or
one ``register`` call; what the row can do (an oracle's ``per_player``, a provider's ``free``,
``images``, ``counts_tokens`` and ``grammar``, a game's own parameter) are fields of the
object it names, not lists kept elsewhere (issue 27).

This module knows only the error tree: the configuration checks a name against a registry
(``Registry.check``, whose message names the valid choices) without importing what the row
names.
"""

from __future__ import annotations

import importlib
from typing import Any

from csro.errors import ConfigError


class Registry:
    """Named rows of one kind, each loaded when used.

    Args:
      field: the configuration field that names a row (``oracle.kind``), for messages.
      what: what a row is (``oracle``), for messages.
      rows: name -> ``"module:attribute"`` or the object.
    """

    def __init__(self, field: str, what: str, rows: dict[str, Any]):
        self.field = field
        self.what = what
        self._rows = dict(rows)

    def register(self, name: str, row: Any) -> None:
        """Add a row; a name already taken is refused (a second row would shadow the first)."""
        if name in self._rows:
            raise ValueError(f"{self.field}: {name!r} is already registered")
        self._rows[name] = row

    def names(self) -> tuple[str, ...]:
        return tuple(self._rows)

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def check(self, name: str) -> str:
        """``name`` if it has a row, else ValueError naming the valid choices (a config validator)."""
        if name not in self._rows:
            raise ValueError(f"unknown {self.what} {name!r} (valid: {', '.join(self._rows)})")
        return name

    def load(self, name: str) -> Any:
        """The object of row ``name``, imported on first use; ConfigError naming the field and
        the valid choices for a name without a row."""
        try:
            row = self._rows[self.check(name)]
        except ValueError as exc:
            raise ConfigError(f"{self.field}: {exc}") from None
        if isinstance(row, str):
            module, _, attribute = row.partition(":")
            row = self._rows[name] = getattr(importlib.import_module(module), attribute)
        return row


ORACLES = Registry("oracle.kind", "oracle", {
    "zero_shot": "csro.oracles._refine:ZeroShot",
    "linear_refinement": "csro.oracles._refine:LinearRefinement",
    "reflect": "csro.oracles._reflect:Reflect",
    "evolve": "csro.oracles.evolve:Evolve",
    "no_model": "csro.oracles._baseline:NoModel",
    "grammar_search": "csro.oracles.evolve:GrammarSearch",
})

PROVIDERS = Registry("llm.provider", "provider", {
    "embedded": "csro.llm.embedded:EmbeddedProvider",
    "openai": "csro.llm.openai:OpenAIProvider",
    "gemini": "csro.llm.gemini:GeminiProvider",
    "anthropic": "csro.llm.anthropic:AnthropicProvider",
    "files": "csro.llm.files:FilesProvider",
    "replay": "csro.llm.replay:ReplayProvider",
})
