"""The ``files`` provider: replies taken from a folder of files, for tests and for seeding a run
with hand-written policies (not in Hennes et al., arXiv 2603.10098; our addition).

The replies are the folder's ``*.py``, ``*.txt`` and ``*.md`` files sorted by name, each
file's whole content one reply. A reply is matched to its call by the call's *ordinal*,
the order in which its key was first submitted (``on_submit``, called by the client in
request order), never by the order in which concurrent calls arrive: call ``i`` gets
``files[i % n]``, cycling when the files run out.

The replies cost nothing (``csro.llm.prices``); their tokens are counted with csro's
approximation (``csro.llm.tokens``), so a files run's usage and budget read like a model's.
"""

from __future__ import annotations

import pathlib
import threading

from csro.config import LLMConfig
from csro.errors import ConfigError
from csro.llm._types import CallKey, LLMReply, LLMRequest
from csro.llm.tokens import approx_prompt_tokens, approx_tokens

SUFFIXES = (".py", ".txt", ".md")


class FilesProvider:
    """Replies from the files of ``folder``, by call ordinal."""

    name = "files"
    max_concurrency: int | None = None
    grammar = False
    free = True
    counts_tokens = False

    @classmethod
    def from_config(cls, llm: LLMConfig, _: object = None) -> "FilesProvider":
        if llm.path is None:
            raise ConfigError("llm.path: the files provider needs a folder of replies")
        return cls(pathlib.Path(llm.path).expanduser())

    @classmethod
    def takes_images(cls, llm: LLMConfig) -> bool:
        return False

    def __init__(self, folder: str | pathlib.Path):
        self.folder = pathlib.Path(folder)
        if not self.folder.is_dir():
            raise ConfigError(f"llm.path: the files provider needs a folder of replies, {self.folder} is not one")
        self.files = sorted((p for p in self.folder.iterdir() if p.is_file() and p.suffix in SUFFIXES),
                            key=lambda p: p.name)
        if not self.files:
            raise ConfigError(f"llm.path: the folder {self.folder} holds no reply files "
                              f"({', '.join('*' + s for s in SUFFIXES)})")
        self.model = self.folder.name
        self._replies = [p.read_text(encoding="utf-8") for p in self.files]
        self._ordinals: dict[CallKey, int] = {}
        self._lock = threading.Lock()

    def on_submit(self, key: CallKey) -> int:
        """The ordinal of ``key``: the next free one for a new key, the same one for a known key."""
        with self._lock:
            return self._ordinals.setdefault(key, len(self._ordinals))

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMReply:
        ordinal = self.on_submit(request.key)
        text = self._replies[ordinal % len(self._replies)]
        return LLMReply(request.key, text, self.name, self.model, approx_prompt_tokens(request), approx_tokens(text))

    def close(self) -> None:
        """Nothing to release."""
