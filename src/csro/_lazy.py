"""A package's public names, imported from their modules only when first used (PEP 562).

``csro status DIR`` needs the LLM call records, not the embedded model's bindings; a package
root that imported every module would make each command pay for all of them. A package lists
its exports as ``{name: module}`` and calls ``lazy_package(__name__, exports)``: a name's
module is imported on first use, and the value kept, so it happens once.

One subtlety: a name may also be its module's (``csro.llm.usage`` the function, from
``csro.llm.usage`` the module). The import system binds a submodule on its package when the
submodule is first imported, which would replace the export; the package keeps the export.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any, Mapping


class _LazyPackage(types.ModuleType):
    _exports: Mapping[str, str]

    def __getattr__(self, name: str) -> Any:
        module = self.__dict__["_exports"].get(name)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and self.__dict__.get("_exports", {}).get(name) == value.__name__:
            value = getattr(value, name)  # the export of the same name, not its module
        super().__setattr__(name, value)


def lazy_package(package: str, exports: Mapping[str, str]) -> list[str]:
    """Serve ``exports`` (public name -> module) lazily from ``package``; returns its ``__all__``."""
    module = sys.modules[package]
    module.__dict__["_exports"] = dict(exports)
    module.__class__ = _LazyPackage
    return sorted(exports)
