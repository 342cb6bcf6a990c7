"""Policy references: ``builtin:NAME`` or a path to a Python source file.

A resolved reference is a ``PolicySpec``: either a trusted built-in of the game (run in the
runner's process) or untrusted source code (run only in a sandboxed worker). The source is
read here as text and never imported or executed by the main process.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pathlib

from csro.errors import PolicyError
from csro.games import CodeGame
from csro.games import BuiltinPolicy

BUILTIN_PREFIX = "builtin:"
MAX_SOURCE_BYTES = 1_000_000


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """A policy the runner can play: a name plus either a built-in or source code.

    Attributes:
      name: how tables and JSON show it (``builtin:greenberg``, a file stem, or an id).
      source: Python source of an untrusted code policy (None for built-ins).
      builtin: the trusted built-in policy (None for code policies).
      class_name: the policy class the source must define (the game's ``policy_class``).
    """

    name: str
    source: str | None = None
    builtin: BuiltinPolicy | None = None
    class_name: str = "Agent"

    def __post_init__(self) -> None:
        if (self.source is None) == (self.builtin is None):
            raise ValueError("a PolicySpec has exactly one of source and builtin")

    @property
    def is_code(self) -> bool:
        return self.source is not None

    @property
    def sha256(self) -> str | None:
        """Hash of the source (None for built-ins): the identity of a code policy."""
        if self.source is None:
            return None
        return hashlib.sha256(self.source.encode()).hexdigest()


def code_policy(name: str, source: str, game: CodeGame) -> PolicySpec:
    """A code policy from source text (e.g. an LLM reply), for ``game``."""
    return PolicySpec(name=name, source=source, class_name=game.policy_class)


def resolve(ref: str, game: CodeGame) -> PolicySpec:
    """Resolve ``builtin:NAME`` or a file path into a PolicySpec for ``game``.

    Raises PolicyError naming the reference when the built-in is unknown or the file is
    missing, unreadable, not UTF-8 or too large.
    """
    if ref.startswith(BUILTIN_PREFIX):
        name = ref[len(BUILTIN_PREFIX):]
        builtins = game.builtins()
        if name not in builtins:
            known = ", ".join(sorted(builtins))
            raise PolicyError(f"unknown built-in policy {ref!r} for game {game.name!r}; known: {known}")
        return PolicySpec(name=ref, builtin=builtins[name], class_name=game.policy_class)
    path = pathlib.Path(ref)
    if not path.is_file():
        raise PolicyError(f"policy file not found: {ref} (give a file path or builtin:NAME)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {ref}: {exc.strerror}") from exc
    if len(data) > MAX_SOURCE_BYTES:
        raise PolicyError(f"policy file {ref} is larger than {MAX_SOURCE_BYTES} bytes")
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError(f"policy file {ref} is not UTF-8 text") from exc
    return PolicySpec(name=path.stem, source=source, class_name=game.policy_class)
