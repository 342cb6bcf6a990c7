"""Package boundaries: no module imports another package's private module.

A private module is one whose name (or a package on its path) starts with ``_``; it may be
imported only from inside the package that holds it (``csro.llm._types`` from ``csro.llm``
and its subpackages). Everything else goes through the package's root (``from csro.llm
import LLMRequest``) or a public module. Also pinned here: capabilities live on their
contracts, so game classes are not tested with isinstance outside ``csro.games`` and
provider names are not compared outside ``csro.llm``.
"""

from __future__ import annotations

import ast
import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in sorted((SRC / "csro").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imported(module: str, path: pathlib.Path, tree: ast.AST) -> list[tuple[int, str]]:
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return found


def _owner_of_private(target: str, modules: dict[str, pathlib.Path]) -> str | None:
    """The package whose private module ``target`` is (None if it is not a private module)."""
    parts = target.split(".")
    for i, part in enumerate(parts[1:], start=1):
        name = ".".join(parts[:i + 1])
        if name not in modules:
            return None  # an attribute, not a module
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_no_module_imports_another_packages_private_module():
    modules = _modules()
    offences = set()
    for module, path in modules.items():
        for line, target in _imported(module, path, ast.parse(path.read_text(encoding="utf-8"))):
            owner = _owner_of_private(target, modules)
            if owner is not None and not (module == owner or module.startswith(owner + ".")):
                offences.add(f"{path.relative_to(SRC)}:{line} imports from {owner}'s private modules")
    assert sorted(offences) == []


def test_capabilities_are_asked_of_their_contracts():
    game_class = re.compile(r"isinstance\([^)]*\b(RRPSGame|LeducGame|GenericGame|\w+Game)\b")
    provider_name = re.compile(r"provider\s*(==|!=|in)\s*[\"'(]")
    offences = []
    for module, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        for n, line in enumerate(text.splitlines(), start=1):
            if not module.startswith("csro.games") and game_class.search(line):
                offences.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
            if not module.startswith("csro.llm") and provider_name.search(line):
                offences.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert offences == []
