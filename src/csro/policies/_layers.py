"""The kernel layers under every untrusted program, as the parent (trusted) side knows them.

The worker applies them to itself (``_kernel.py``) before it reads the policy; this module
says which layers there are, what each holds and what giving it up costs (the words of
``csro sandbox check``, of the fail-closed error and of docs/sandbox.md), builds the seccomp
program once per process, and resolves the user's opt-in to run without a layer.

Fail closed: a worker that cannot apply a layer does not run the policy, unless the layer is
named in ``SandboxLimits.allow_missing`` (config ``sandbox.allow_missing``) or in the
environment variable ``CSRO_SANDBOX_ALLOW_MISSING`` (comma-separated; for commands without
a config such as ``csro eval``).

Why these tools. Landlock and the namespaces are three and a handful of system calls each:
ctypes over libc in ``_kernel.py`` (the PyPI ``landlock`` package is a development release
without the ABI 6 scopes). The seccomp program is compiled by libseccomp (Debian's
``libseccomp2``, maintained with the kernel's system-call tables, and the one that gets the
architecture checks and the x32 aliases right) through ``pyseccomp``, its ctypes binding on
PyPI, and handed to the worker as bytes, so the worker loads a finished program with one
``prctl`` and imports nothing more.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from functools import lru_cache

from csro.errors import SandboxError

LAYERS = ("namespaces", "landlock", "seccomp")
ENV_ALLOW_MISSING = "CSRO_SANDBOX_ALLOW_MISSING"

HOLDS = {
    "namespaces": "new user (when not root), network, mount, pid, IPC and UTS namespaces: no "
                  "network interface but a down loopback, no other process visible, and a root "
                  "of the worker's own holding only the Python path, the system libraries and "
                  "/dev/null, /dev/urandom and /etc/ld.so.cache, read-only (no /proc, /sys, "
                  "/tmp or $HOME: nothing of the host to read, stat or list)",
    "landlock": "a filesystem allow-list: only the Python installation and the policy's allowed "
                "imports can be read; nothing is executed, written, created, removed, renamed, "
                "linked or truncated; TCP bind/connect denied; signals and abstract Unix "
                "sockets scoped to the sandbox",
    "seccomp": "a system-call allow-list (no_new_privs): only the calls CPython and numpy need "
               "after set-up (src/csro/policies/seccomp_allow.toml, with the reason for each "
               "family); any other call -- sockets, exec, fork and threads, signals, ptrace, "
               "mounts, namespaces, file creation and metadata changes, extended attributes, "
               "every call newer than the list, the 32-bit entry points -- kills the worker",
}

ALLOW_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seccomp_allow.toml")
_CONDITION = re.compile(r"arg([0-5]) (?:& (0x[0-9a-fA-F]+|[0-9]+) )?(==|!=) (0x[0-9a-fA-F]+|[0-9]+)$")


@lru_cache(maxsize=1)
def allow_list() -> dict:
    """The reviewed allow-list (``seccomp_allow.toml``): ``reviewed`` architectures and the
    families, each with its reason."""
    with open(ALLOW_LIST, "rb") as f:
        return tomllib.load(f)


def allowed_calls(arch: str) -> dict[str, list[list[tuple[int, str, int, int]]]]:
    """The calls the worker may make on ``arch``: name -> its alternatives, each a list of
    conditions (argument, "==" | "!=" | "&==", mask or value, value); [] = unconditional.
    Raises SandboxError for an architecture nobody reviewed (fail closed)."""
    data = allow_list()
    if arch not in data["reviewed"]:
        raise SandboxError(f"no reviewed system-call allow-list for the {arch} architecture "
                           f"({os.path.basename(ALLOW_LIST)} covers "
                           f"{', '.join(data['reviewed'])}); the filter would have to guess")
    calls: dict[str, list] = {}
    for family in data["family"]:
        for name in family["calls"] + family.get(arch, []):
            calls[name] = []
        for name, alternatives in family.get("when", {}).items():
            calls[name] = [[_condition(c) for c in alt.split(" and ")] for alt in alternatives]
    return calls


def _condition(text: str) -> tuple[int, str, int, int]:
    m = _CONDITION.match(text.strip())
    if m is None:
        raise SandboxError(f"{os.path.basename(ALLOW_LIST)}: cannot read the condition {text!r}")
    arg, mask, op, value = m.groups()
    if mask is not None:
        if op != "==":
            raise SandboxError(f"{os.path.basename(ALLOW_LIST)}: only 'argN & MASK == V' "
                               f"is supported, not {text!r}")
        return int(arg), "&==", int(mask, 0), int(value, 0)
    return int(arg), op, int(value, 0), 0


def allow_missing(configured: tuple[str, ...] | frozenset[str] = ()) -> frozenset[str]:
    """The layers the user named as allowed to be missing (config and environment)."""
    names = {n.strip() for n in os.environ.get(ENV_ALLOW_MISSING, "").split(",") if n.strip()}
    names |= set(configured)
    unknown = names - set(LAYERS)
    if unknown:
        raise SandboxError(f"unknown sandbox layer(s) {', '.join(sorted(unknown))} in "
                           f"sandbox.allow_missing / {ENV_ALLOW_MISSING}; the layers are "
                           f"{', '.join(LAYERS)}")
    return frozenset(names)


def missing_message(layer: str, detail: str) -> str:
    """The fail-closed error: which layer, why, and what the opt-in gives up."""
    return (f"the sandbox's {layer} layer cannot be applied on this machine ({detail}), so "
            f"untrusted code does not run. It would hold: {HOLDS.get(layer, layer)}. To run "
            f"without it, giving that up, name it in the config (sandbox.allow_missing: "
            f"[{layer}]) or the environment ({ENV_ALLOW_MISSING}={layer}); "
            f"`csro sandbox check` shows what this machine gives")


def describe(layers: dict) -> dict[str, str]:
    """One line per layer for a person, from what a worker reported (``check_layers``, a
    run's record): applied, and with what, or missing, and why."""
    missing = layers.get("missing", {})
    ll = layers.get("landlock") or {}
    arch = os.uname().machine
    try:
        calls = allowed_calls(arch)
        allowed = (f"allow-list for {arch}: {len(calls)} system calls "
                   f"({sum(1 for c in calls.values() if c)} with argument conditions), any "
                   f"other kills the worker")
    except SandboxError as e:
        allowed = str(e)
    if "root" not in layers:  # recorded before the worker had a root of its own
        allowed = "a deny-list of named calls (recorded before the allow-list)"
    return {
        "namespaces": f"missing: {missing['namespaces']}" if "namespaces" in missing else
        ", ".join(layers.get("namespaces", [])),
        "root": f"its own, read-only: {', '.join(layers['root'])}; nothing else (no /proc)"
        if layers.get("root") else "the host's (needs the mount namespace)" if "root" in layers
        else f"the host's, hidden: {', '.join(layers.get('hidden', []))}",
        "landlock": f"missing: {missing['landlock']}" if "landlock" in missing else
        f"ABI {ll.get('abi')}; files" + (", TCP" if ll.get("tcp") else " (no TCP rules)")
        + (", signal and abstract-socket scopes" if ll.get("scoped") else " (no scopes)"),
        "seccomp": f"missing: {missing['seccomp']}" if "seccomp" in missing else allowed,
        "uid": {"private": "a uid of its own (started as root)",
                "mapped": "root of its own user namespace, no capabilities",
                "caller": "the caller's uid"}.get(layers.get("uid"), str(layers.get("uid"))),
    }


def explain(layers: dict) -> str:
    """What ``csro sandbox check`` prints: a line per layer, then what each missing one gives
    up and how to allow it."""
    lines = [f"{name:<11} {status}" for name, status in describe(layers).items()]
    for name in layers.get("missing", {}):
        lines.append(f"\n{name} is missing: {HOLDS[name]} does not hold. Untrusted code does not "
                     f"run unless you allow it: sandbox.allow_missing: [{name}] or "
                     f"{ENV_ALLOW_MISSING}={name}.")
    return "\n".join(lines)


@lru_cache(maxsize=1)
def seccomp_program() -> bytes:
    """The worker's seccomp-bpf program (``struct sock_filter`` array), built once from the
    allow-list: default action kill the process, other architectures' entry points too.

    Raises SandboxError when libseccomp (Debian's ``libseccomp2``) or its binding is missing,
    or when this architecture has no reviewed list.
    """
    calls = allowed_calls(os.uname().machine)
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as e:  # the binding raises when the C library is missing
        raise SandboxError(f"libseccomp is not available ({e})") from e
    ops = {"==": sc.EQ, "!=": sc.NE, "&==": sc.MASKED_EQ}
    f = sc.SyscallFilter(defaction=sc.KILL_PROCESS)
    f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)  # i386 and x32 entry points too
    for name, alternatives in calls.items():
        for conditions in alternatives or [[]]:
            try:
                f.add_rule(sc.ALLOW, name, *[sc.Arg(arg, ops[op], a, b)
                                             for arg, op, a, b in conditions])
            except (ValueError, OSError):  # unknown to this libseccomp: it stays forbidden
                continue
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        program = out.read()
    if not program or len(program) % 8:
        raise SandboxError("libseccomp exported an empty seccomp program")
    return program
