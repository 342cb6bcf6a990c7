"""Package boundaries: the layers of docs/architecture.md, no import circle, and no module
importing another package's private module.

Layers: every top-level module or package of ``csro`` sits in one layer of ``LAYERS`` (from
the games and policies at the bottom to the CLI at the top, as docs/architecture.md writes
them), and may import only from its own package or a lower layer; imports inside functions
count too (a late import hides a circle, it does not remove it). No circle between modules
either, within a package included.

A private module is one whose name (or a package on its path) starts with ``_``; it may be
imported only from inside the package that holds it (``csro.llm._types`` from ``csro.llm``
and its subpackages). Everything else goes through the package's root (``from csro.llm
import LLMRequest``) or a public module. Also pinned here: capabilities live on their
contracts, so game classes are not tested with isinstance outside ``csro.games`` and
provider names are not compared outside ``csro.llm``.
"""

from __future__ import annotations

import ast
import collections
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


LAYERS = (  # bottom to top; docs/architecture.md, "Layers"
    ("foundations", {"csro", "csro._lazy", "csro.errors", "csro.events", "csro.seeding", "csro.extract", "csro.gbnf",
                     "csro.authorship", "csro.text"}),
    ("registries", {"csro.registry"}),
    ("games and the sandbox", {"csro.games", "csro.policies"}),
    ("solvers", {"csro.solvers"}),
    ("configuration", {"csro.config"}),
    ("evaluation and the LLM layer", {"csro.evaluation", "csro.llm"}),
    ("plumbing", {"csro._sqlite", "csro.drafting", "csro.simulate"}),
    ("arena and store", {"csro.arena", "csro.store"}),
    ("meta-game, oracles, recording, report", {"csro.metagame", "csro.oracles", "csro.recording", "csro.report"}),
    ("the loop", {"csro.psro", "csro.scoring", "csro.cost"}),
    ("a CSRO run", {"csro.runs"}),
    ("run kinds", {"csro.discover", "csro.reproduce", "csro.robots", "csro.train", "csro.runkinds"}),
    ("the command", {"csro.cli"}),
    ("python -m csro", {"csro.__main__"}),
)


def _top(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _edges(modules: dict[str, pathlib.Path]) -> dict[str, set[str]]:
    """module -> the csro modules it imports (at the top or inside a function); ``from P import
    m`` is an import of the submodule ``P.m`` where there is one, else of ``P``; a package that
    serves its names lazily (``csro._lazy``) imports every module its table names."""
    def resolve(name: str) -> str | None:
        parts = name.split(".")
        return next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in modules), None)

    edges: dict[str, set[str]] = collections.defaultdict(set)
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and path.name == "__init__.py" and node.value in modules:
                names = [node.value]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                names = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
            else:
                continue
            edges[module] |= {r for r in map(resolve, names) if r is not None and r != module}
    return edges


def test_every_import_goes_down_the_layers():
    layer = {top: i for i, (_, tops) in enumerate(LAYERS) for top in tops}
    modules = _modules()
    unplaced = sorted({_top(m) for m in modules} - set(layer))
    assert unplaced == [], f"place these in a layer of LAYERS and docs/architecture.md: {unplaced}"
    offences = sorted(f"{m} ({LAYERS[layer[_top(m)]][0]}) imports {t} ({LAYERS[layer[_top(t)]][0]})"
                      for m, targets in _edges(modules).items() for t in targets
                      if _top(t) != _top(m) and layer[_top(t)] >= layer[_top(m)])
    assert offences == []


def test_no_import_circle():
    edges = _edges(_modules())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(component))

    for v in list(edges):
        if v not in index:
            visit(v)
    assert circles == []


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
