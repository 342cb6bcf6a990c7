"""Getting the program out of an LLM reply: pure string and ``ast`` processing, never exec.

Replies come in many shapes: one or several fenced ```python blocks with prose around them,
an unterminated block (generation stopped at the closing fence, or ran out of tokens), bare
code with a sentence before or after it, or no code at all. ``extract_code`` picks the block
that defines the policy class (the first such block; else the first block), cuts leading and
trailing prose, trims lines from the end until the rest parses (a truncated reply keeps its
complete part, as FunSearch trims truncated samples), drops top-level
``if __name__ == "__main__":`` blocks, and reports replies that hold no class of that name.

``program_id`` says when two programs are one candidate (issue 26: the embedded model often
writes the same program twice, differing in layout or comments at most); ``reply_program``
is that identity for any reply, whatever class its code defines (a run's count of distinct
programs per call, ``csro.llm.usage``).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
import textwrap

# An opening fence (```python, ```py, ``` ...) and everything up to the closing fence or the end.
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.M | re.S)
# A line that can start a Python module.
_CODE_START = re.compile(r"^(import |from \S+ import |class |def |@|#|\"\"\"|'''|[A-Za-z_][A-Za-z0-9_]* *=)")


@dataclasses.dataclass(frozen=True)
class Extracted:
    """The program found in a reply (``source``), or why there is none (``error``); ``said``
    is what the reply said besides it, where a caller keeps that (e.g. a diagnosis)."""

    source: str | None
    error: str | None = None
    said: str | None = None


def no_code_error(class_name: str) -> str:
    return f"reply contains no Python code defining class {class_name}"


def extract_code(text: str, class_name: str) -> Extracted:
    """The program in ``text`` (a reply joined with its prefill) defining ``class_name``."""
    candidates = _python_blocks(text)
    if not candidates:
        candidates = [_bare_code(text)]
    programs = [p for p in (_parseable_prefix(textwrap.dedent(c)) for c in candidates) if p]
    defining = [p for p in programs if _defines(p, class_name)]
    if not defining:
        return Extracted(None, no_code_error(class_name))
    return Extracted(_drop_main_block(defining[0]))


def _python_blocks(text: str) -> list[str]:
    """The bodies of the reply's fenced blocks that are Python or unlabelled, in order."""
    return [body for lang, body in _FENCE.findall(text) if lang.lower() in ("", "python", "py", "python3")]


def _bare_code(text: str) -> str:
    """Unfenced text from the first line that looks like code."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if _CODE_START.match(line):
            return "\n".join(lines[i:])
    return ""


def _parseable_prefix(code: str) -> str:
    """The longest prefix of whole lines that parses (trailing prose or truncation cut off)."""
    lines = code.rstrip().splitlines()
    for end in range(len(lines), 0, -1):
        candidate = "\n".join(lines[:end]).rstrip()
        if not candidate:
            continue
        try:
            ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue
        return candidate + "\n"
    return ""


def _defines(code: str, class_name: str) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name == class_name for n in ast.parse(code).body)


def _is_main_guard(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def _drop_main_block(code: str) -> str:
    """Remove top-level ``if __name__ == ...`` blocks (test drivers the model likes to add)."""
    tree = ast.parse(code)
    guards = [n for n in tree.body if _is_main_guard(n)]
    if not guards:
        return code
    lines = code.splitlines()
    for node in reversed(guards):
        del lines[node.lineno - 1:node.end_lineno]
    return "\n".join(lines).rstrip() + "\n"


def reply_program(text: str) -> str | None:
    """The ``program_id`` of the first code a reply holds (a fenced block, else bare code),
    cut to its parseable lines as ``extract_code`` cuts it; None when it holds no code."""
    blocks = _python_blocks(text)
    code = _parseable_prefix(textwrap.dedent(blocks[0] if blocks else _bare_code(text)))
    return program_id(code) if code else None


def program_id(source: str) -> str:
    """A hash that two programs share when they differ only in layout, comments, docstrings
    or quoting: the SHA-256 of their syntax tree (``ast.dump``: no positions) with every
    module, class and function docstring dropped (our call: none of these change what a
    policy does, and a policy that reads its own docstring is not one a model writes).
    Text that does not parse is identified by itself, as is."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return hashlib.sha256(source.encode("utf-8")).hexdigest()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and _docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode("utf-8")).hexdigest()


def _docstring(node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = node.body[0] if node.body else None
    return (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str))
