"""Whether the instances of a policy may share one run of its module, inside the worker.

Issue 28 gives each instance (one seat of one match) a fresh copy of the policy module, so
that what one match stores in module globals, class attributes, default arguments or
closures is never seen by another. That costs the worker about a fifth of its CPU on RRPS:
hundreds of copies of the same code take turns on the CPU's caches. Most policies keep their
state on ``self`` and their module holds only constants, and then a copy changes nothing.

``reason_to_copy(tree, module)`` decides it, conservatively: None means that no state can
pass between instances through the module's own objects, so they may share the one run the
worker made to check the policy; otherwise the reason (the first found) for a fresh copy per
instance. Our rule (the issue asks for isolation, not for this analysis), in two parts:

* after the module ran once (``module``), every global and every class attribute of the
  policy's classes is deeply immutable (numbers, strings, bytes, None, tuples and
  frozensets of these), a compiled regex, a module, a top-level class of the policy (plain
  ``type``, checked the same way) or a class of an imported module, a function of the policy
  without mutable defaults, closure cells or attributes (or one wrapped by staticmethod,
  classmethod or property), an object bound by a top-level import, or a dict, list or set
  of deeply immutable elements (a *mutable container*);
* the source (``tree``) does nothing that could change those objects: no ``global`` or
  ``nonlocal``; attributes assigned or deleted only on ``self`` (the never-rebound first
  parameter of an undecorated function in a top-level class body); the policy's classes
  named only to call them, to derive from them or to read an attribute that is not a
  method, and its methods never named bare, so that ``self`` is always an instance; no
  ``getattr``, ``setattr``, ``type``, ``vars``, ``globals``, ``eval``, ``exec``, ... (``DYNAMIC``),
  no class pattern in ``match``, no dunder but ``__init__`` and no string naming one; imports only of the modules in
  ``IMPORTABLE``; and a mutable container only read: subscripted, iterated, right of ``in``, passed
  to a builtin of ``READERS`` or to ``.choice``/``.choices``/``.sample``, or through a method
  of ``READ_METHODS``, never assigned, returned, stored elsewhere or passed to other calls.

The worker also copies per instance when running the module drew from the random streams,
so that each instance draws from its own stream as before (``_worker._compile``). What is
shared between instances with or without a copy (the imported modules, ``builtins``) is
outside this rule: docs/sandbox.md.
"""

import ast
import re
import sys
import types

# Not operator (attrgetter) nor string (Formatter.get_field): they fetch attributes by a
# name that may be computed, where the check of a container's uses cannot see them.
IMPORTABLE = frozenset("""
__future__ abc bisect collections collections.abc copy dataclasses enum fractions functools
heapq itertools math numbers random re statistics typing
""".split())
DYNAMIC = frozenset("""
getattr setattr delattr vars globals locals eval exec compile __import__ __builtins__
breakpoint open input memoryview type __class__
""".split())
READERS = frozenset("""
len max min sum sorted list tuple set frozenset dict any all enumerate zip reversed iter
str repr
""".split())
READ_METHODS = frozenset("get keys values items index count copy".split())
SAMPLERS = frozenset(("choice", "choices", "sample"))
DUNDERS_ALLOWED = frozenset(("__init__",))
_SCALARS = (type(None), bool, int, float, complex, str, bytes, range, type(Ellipsis))
_CONTAINERS = (dict, list, set)
_MODULE_DUNDERS = frozenset("""
__name__ __doc__ __package__ __loader__ __spec__ __builtins__ __file__ __cached__
""".split())
_CLASS_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


class _Copy(Exception):
    """Raised with the reason why instances need a fresh copy of the module."""


def reason_to_copy(tree, module):
    """None if the instances of the policy may share ``module`` (see the module docstring),
    else why each needs a fresh copy. ``tree`` is the AST of the source ``module`` ran."""
    try:
        _Source(tree, _runtime(tree, module)).check()
    except _Copy as e:
        return e.args[0]
    except Exception as e:  # e.g. objects nested too deeply: not proved, so copy
        return "the check failed (%s)" % type(e).__name__
    return None


# ---------------------------------------------------------------- the module's objects

class _Found:
    """What the source check needs to know of the module's objects, by name."""

    def __init__(self):
        self.containers = set()  # mutable containers: globals and class attributes
        self.classes = set()  # globals bound to a class of the policy
        self.methods = set()  # class attributes of the policy that are functions
        self.seen = set()  # the policy's classes checked


def _runtime(tree, module):
    """Check the values the module's run left (see the module docstring)."""
    imported = _imported_names(tree)
    found = _Found()
    for name, value in list(module.__dict__.items()):
        if name in _MODULE_DUNDERS or name in imported:
            continue
        if name == "__annotations__" and type(value) is dict:
            continue  # reachable only through a dunder, which the source may not name
        if issubclass(type(value), type) and _own_class(value, module):
            found.classes.add(name)
            _class(name, value, module, found)
        else:
            _value(name, value, module, found)
    return found


def _imported_names(tree):
    """Globals bound by a top-level import and by nothing else: the imported module's own
    objects, the same in every copy of the policy module."""
    imported, other = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imported.add((alias.asname or alias.name).split(".")[0])
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            other.update(_bound_by(node))
    return imported - other


def _value(name, value, module, found):
    t = type(value)
    if _immutable(value):
        return
    if t in _CONTAINERS:
        items = list(value.items()) if t is dict else list(value)
        if all(_immutable(x) for item in items for x in (item if t is dict else (item,))):
            found.containers.add(name)
            return
        raise _Copy("%r holds a %s of mutable objects" % (name, t.__name__))
    if t is types.ModuleType or t is re.Pattern:
        return
    if t is types.FunctionType:
        return _function(name, value, module)
    if t in (staticmethod, classmethod):
        return _value(name, value.__func__, module, found)
    if t is property:
        for f in (value.fget, value.fset, value.fdel):
            if f is not None:
                _value(name, f, module, found)
        return
    if t is types.BuiltinFunctionType and type(value.__self__) is types.ModuleType:
        return
    if issubclass(t, type) and not _own_class(value, module):
        return  # a class of an imported module: shared by every copy anyway
    raise _Copy("%r is a %s, which may carry state" % (name, t.__name__))


def _immutable(value):
    t = type(value)
    if t in _SCALARS:
        return True
    if t is tuple or t is frozenset:
        return all(_immutable(x) for x in value)
    return False


def _function(name, f, module):
    if f.__globals__ is not module.__dict__:
        return  # a function of an imported module: shared by every copy anyway
    if not _immutable(f.__defaults__) or not _immutable(tuple((f.__kwdefaults__ or {}).items())):
        raise _Copy("%r has a mutable default argument" % name)
    if set(f.__code__.co_freevars) - {"__class__"}:
        raise _Copy("%r is a closure" % name)
    if f.__dict__:
        raise _Copy("%r has attributes of its own" % name)


def _own_class(cls, module):
    """Whether ``cls`` was made by the policy: not found where its module says it lives."""
    where = sys.modules.get(type.__dict__["__module__"].__get__(cls))
    if where is None or where is module:
        return True
    for part in type.__dict__["__qualname__"].__get__(cls).split("."):
        if type(where) is types.ModuleType:
            where = where.__dict__.get(part)
        elif issubclass(type(where), type):
            where = type.__dict__["__dict__"].__get__(where).get(part)
        else:
            return True
    return where is not cls


def _class(name, cls, module, found):
    """Check a top-level class of the policy: its bases and its attributes."""
    if cls in found.seen:
        return
    found.seen.add(cls)
    if type(cls) is not type:
        raise _Copy("%r has a metaclass" % name)
    for base in cls.__mro__[1:]:
        if type(base) is not type:
            raise _Copy("%r has a base with a metaclass" % name)
        if _own_class(base, module):
            _class(name, base, module, found)
    for key, value in list(type.__dict__["__dict__"].__get__(cls).items()):
        if key in ("__dict__", "__weakref__") or type(value) in _CLASS_DESCRIPTORS:
            continue
        if key == "__annotations__" and type(value) is dict:
            continue
        if issubclass(type(value), type) and _own_class(value, module):
            raise _Copy("%r.%s is a class of the policy" % (name, key))
        if type(value) in (types.FunctionType, staticmethod, classmethod, property):
            found.methods.add(key)
        _value(key, value, module, found)


# ---------------------------------------------------------------- the source

def _bound_by(node):
    """The names a node binds (assigned, deleted, defined, imported, caught, matched)."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


class _Source:
    """The checks on the source (first part of the module docstring)."""

    def __init__(self, tree, found):
        self.tree = tree
        self.containers = found.containers
        self.classes = found.classes
        self.methods = found.methods
        self.parent = {}
        bound = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
            for name in _bound_by(node):
                bound.setdefault(name, []).append(node)
        self.bound = bound
        self.selves = set()  # (method, its first parameter's name): may assign on self

    def check(self):
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                self._methods(node)
        for node in ast.walk(self.tree):
            self._node(node)

    def _methods(self, cls):
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list:
                args = node.args.posonlyargs + node.args.args
                if args and all(n is args[0] for n in self.bound.get(args[0].arg, ())
                                if self._inside(n, node)):
                    self.selves.add((node, args[0].arg))

    def _inside(self, node, ancestor):
        while node is not None:
            if node is ancestor:
                return True
            node = self.parent.get(node)
        return False

    def _node(self, node):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            raise _Copy("a %s statement" % type(node).__name__.lower())
        if isinstance(node, ast.MatchClass):  # reads attributes named in the pattern
            raise _Copy("a class pattern")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom) and (node.level or any(a.name == "*" for a in node.names)):
                raise _Copy("a relative or star import")
            for name in names:
                if name not in IMPORTABLE:
                    raise _Copy("it imports %s" % name)
        elif isinstance(node, ast.Name):
            if node.id in DYNAMIC or (node.id.startswith("__") and node.id.endswith("__")
                                      and node.id not in ("__name__", "__slots__")):
                raise _Copy("it uses %s" % node.id)
            if node.id in self.containers:
                self._read_only(node, node.id)
            if node.id in self.classes:
                self._class_use(node)
            if node.id in self.methods:
                raise _Copy("it names the method %s bare" % node.id)
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in DUNDERS_ALLOWED:
                raise _Copy("it uses the attribute %s" % node.attr)
            if not isinstance(node.ctx, ast.Load) and not self._on_self(node):
                raise _Copy("it assigns an attribute of something other than self")
            if node.attr in self.containers:
                self._read_only(node, node.attr)
        elif isinstance(node, ast.Constant) and type(node.value) is str:
            text = node.value
            if text in self.containers or (text.startswith("__") and text.endswith("__")):
                raise _Copy("it names %r in a string" % text)

    def _class_use(self, node):
        """Raise unless this use of a class of the policy calls it, derives from it or reads
        an attribute that is not a method (so that no method runs with a class as ``self``)."""
        up = self.parent.get(node)
        if isinstance(node.ctx, ast.Load):
            if isinstance(up, ast.Call) and up.func is node:
                return
            if isinstance(up, ast.ClassDef) and node in up.bases:
                return
            if isinstance(up, ast.Attribute) and up.attr not in self.methods:
                return
        raise _Copy("the class %r is used other than to call it or read a constant" % node.id)

    def _on_self(self, node):
        """Whether ``node`` (an attribute target) is ``<self>.x`` in a method of a class."""
        if not isinstance(node.value, ast.Name):
            return False
        return any(node.value.id == name and self._inside(node, method) for method, name in self.selves)

    def _read_only(self, node, name):
        """Raise unless this use of the mutable container ``name`` only reads it."""
        up = self.parent.get(node)
        if isinstance(node.ctx, ast.Store):
            if isinstance(up, ast.Assign) and self._defining(up):
                return
        elif isinstance(node.ctx, ast.Load):
            if isinstance(up, ast.Subscript) and up.value is node and isinstance(up.ctx, ast.Load):
                return
            if isinstance(up, ast.Compare) and any(  # ``x in C``: C's own __contains__, not x's
                    c is node and isinstance(op, (ast.In, ast.NotIn)) for op, c in zip(up.ops, up.comparators)):
                return
            if isinstance(up, (ast.For, ast.comprehension)) and up.iter is node:
                return
            if isinstance(up, ast.Attribute) and up.attr in READ_METHODS:
                return
            if isinstance(up, ast.Call) and node in up.args and self._reader(up.func):
                return
        raise _Copy("the mutable container %r is used in a way that could change it" % name)

    def _defining(self, assign):
        """An assignment at the top level of the module or of a class body."""
        up = self.parent.get(assign)
        return isinstance(up, (ast.Module, ast.ClassDef)) and assign in up.body

    def _reader(self, func):
        """Whether calling ``func`` reads its positional arguments only."""
        if isinstance(func, ast.Name):
            return func.id in READERS and func.id not in self.bound
        if isinstance(func, ast.Attribute):  # no method of the policy may answer to that name
            hooks = {func.attr, "__getattr__", "__getattribute__"}
            return func.attr in SAMPLERS and not hooks & set(self.bound) and not any(
                isinstance(n, ast.Attribute) and n.attr == func.attr and not isinstance(n.ctx, ast.Load)
                for n in ast.walk(self.tree))
        return False
