"""The seccomp allow-list (``seccomp_allow.toml``) as data, and the program built from it run
for real: every system-call number outside the list, named by libseccomp or not, the 32-bit
entry points and the argument conditions, each made in a child under the worker's program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from csro.errors import SandboxError
from csro.policies import Call, Forfeit, PolicyWorker, SandboxLimits, _layers

sc = pytest.importorskip("pyseccomp")
PROBE = os.path.join(os.path.dirname(__file__), "seccomp_probe.py")
ARCH = os.uname().machine
ARCHES = {"x86_64": sc.Arch.X86_64, "aarch64": sc.Arch.AARCH64}
MASK64 = (1 << 64) - 1
KILL_ALL = bytes.fromhex("0600000000000080")  # one instruction: return SECCOMP_RET_KILL_PROCESS


def probe(cases: list, code: dict | None = None, program: bytes | None = None) -> dict:
    job = {"program": (_layers.seccomp_program() if program is None else program).hex(),
           "cases": cases, "code": code or {}}
    run = subprocess.run([sys.executable, PROBE], input=json.dumps(job), capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def number(name: str, arch: str = ARCH) -> int:
    return sc.resolve_syscall(ARCHES[arch], name)


def holds(alternatives: list, args: list) -> bool:
    """Whether a call with ``args`` is allowed by its alternatives (as libseccomp compares)."""
    def ok(arg, op, a, b):
        v = args[arg] & MASK64 if arg < len(args) else 0
        return v == a if op == "==" else v != a if op == "!=" else v & a == b
    return not alternatives or any(all(ok(*c) for c in alt) for alt in alternatives)


def test_every_family_has_a_reason_and_every_name_exists_on_its_architectures():
    data = _layers.allow_list()
    assert set(data["reviewed"]) == {"x86_64", "aarch64"}
    seen = set()
    for family in data["family"]:
        assert len(family["why"].split()) >= 10, family["name"]
        for arch in data["reviewed"]:
            names = family["calls"] + family.get(arch, []) + list(family.get("when", {}))
            unknown = [n for n in names if number(n, arch) < 0]
            assert unknown == [], (family["name"], arch, unknown)
        names = set(family["calls"]) | set(family.get("when", {}))
        assert not names & seen, names & seen  # each call in one family
        seen |= names
    never = {"socket", "socketpair", "clone", "clone3", "fork", "vfork", "execve", "execveat",
             "prctl", "ptrace", "kill", "tgkill", "setxattr", "fsetxattr", "removexattr",
             "getxattr", "listxattr", "statfs", "sysinfo", "memfd_create", "pkey_mprotect",
             "mount", "pivot_root", "unshare", "setns", "open_tree", "io_uring_setup", "bpf",
             "open", "openat2", "chmod", "fchmod", "utimensat", "chown", "fchown"}
    assert not never & set(_layers.allowed_calls(ARCH)), never & set(_layers.allowed_calls(ARCH))


def test_an_architecture_without_a_reviewed_list_fails_closed(monkeypatch):
    """No guessing: elsewhere the seccomp layer is missing, and a worker does not start
    unless the user gave that layer up by name."""
    with pytest.raises(SandboxError, match="no reviewed system-call allow-list for the riscv64"):
        _layers.allowed_calls("riscv64")
    real = os.uname()
    monkeypatch.setattr(os, "uname", lambda: types.SimpleNamespace(
        **{k: getattr(real, k) for k in ("sysname", "nodename", "release", "version")},
        machine="riscv64"))
    monkeypatch.delenv("CSRO_SANDBOX_ALLOW_MISSING", raising=False)
    _layers.seccomp_program.cache_clear()
    try:
        with pytest.raises(SandboxError, match="seccomp layer cannot be applied.*riscv64"):
            with PolicyWorker("class P:\n    pass\n", "P", SandboxLimits(memory_mb=256)) as w:
                w.start()
    finally:
        _layers.seccomp_program.cache_clear()


@pytest.mark.skipif(ARCH not in ("x86_64", "aarch64"), reason="no reviewed list here")
def test_every_number_outside_the_list_kills_and_every_allowed_call_passes():
    """The default action, over every number up to 1000 (the newest calls, ~470 on x86_64
    in 2025, and numbers no kernel has yet): outside the list, SIGSYS; inside, the call runs
    (with zero arguments: it fails or does nothing, as long as the filter let it through)."""
    allowed = {number(n): conds for n, conds in _layers.allowed_calls(ARCH).items()}
    cases = [[str(nr), nr, [0] * 6] for nr in range(0, 1001)]
    # Numbers this kernel answers before seccomp sees them (a virtual machine's own hooks):
    # a program that kills every call does not stop them, so no filter can.
    unfiltered = {int(k) for k, v in probe(cases, program=KILL_ALL).items() if v != "SIGSYS"}
    assert len(unfiltered) <= 4, unfiltered
    got = probe(cases)
    wrong = {nr: got[str(nr)] for nr in range(0, 1001) if nr not in unfiltered and
             (got[str(nr)] == "SIGSYS") == (nr in allowed and holds(allowed[nr], [0] * 6))}
    assert wrong == {}
    newest = ["getxattrat", "setxattrat", "listxattrat", "removexattrat", "file_getattr",
              "file_setattr", "open_tree_attr", "mseal", "lsm_get_self_attr",
              "lsm_set_self_attr", "lsm_list_modules", "statmount", "listmount", "fchmodat2"]
    assert ARCH != "x86_64" or all(got[str(463 + i)] == "SIGSYS" for i in range(7))  # 463..469
    assert all(got[str(nr)] == "SIGSYS" for nr in range(470, 1001))
    assert not {n for n in newest if number(n) >= 0} & set(_layers.allowed_calls(ARCH))


def test_argument_conditions_kill_what_they_leave_out():
    n = number
    prot_rx, anon, at_fdcwd = 5, 0x22, (-100) & MASK64
    cases = {
        "mmap anonymous executable": ([n("mmap"), [0, 4096, prot_rx, anon, MASK64, 0]], True),
        "mmap anonymous read-write": ([n("mmap"), [0, 4096, 3, anon, MASK64, 0]], False),
        "mmap of a file, executable": ([n("mmap"), [0, 4096, prot_rx, 2, 0, 0]], False),
        "mmap of a file, writable and executable": ([n("mmap"), [0, 4096, 7, 2, 0, 0]], True),
        "mprotect to executable": ([n("mprotect"), [0, 0, 4]], True),
        "mprotect to read-only": ([n("mprotect"), [0, 0, 1]], False),
        "openat for writing": ([n("openat"), [at_fdcwd, 0, 1]], True),
        "openat to create": ([n("openat"), [at_fdcwd, 0, 0x40]], True),
        "openat O_TMPFILE": ([n("openat"), [at_fdcwd, 0, 0x410000]], True),
        "openat for reading": ([n("openat"), [at_fdcwd, 0, 0x80000]], False),
        "ioctl TCGETS": ([n("ioctl"), [0, 0x5401, 0]], False),
        "ioctl FS_IOC_SETFLAGS": ([n("ioctl"), [0, 0x40086602, 0]], True),
        "ioctl FS_IOC_GETFLAGS": ([n("ioctl"), [0, 0x80086601, 0]], True),
        "ioctl TCGETS with high bits": ([n("ioctl"), [0, 0x100005401, 0]], True),
        "ioctl TIOCSTI": ([n("ioctl"), [0, 0x5412, 0]], True),
        "fcntl F_GETFD": ([n("fcntl"), [0, 1]], False),
        "fcntl F_SETOWN": ([n("fcntl"), [0, 8, 1]], True),
        "fcntl F_SETLK": ([n("fcntl"), [0, 6, 0]], True),
        "prlimit64 read own": ([n("prlimit64"), [0, 0, 0, 0]], False),
        "prlimit64 set own": ([n("prlimit64"), [0, 0, 1, 0]], True),
        "prlimit64 of pid 1": ([n("prlimit64"), [1, 0, 0, 0]], True),
    }
    got = probe([[label, nr, args] for label, ((nr, args), _) in cases.items()])
    wrong = {label: got[label] for label, (_, killed) in cases.items()
             if (got[label] == "SIGSYS") != killed}
    assert wrong == {}


@pytest.mark.skipif(ARCH != "x86_64", reason="the 32-bit entry points of x86_64")
def test_the_32_bit_entry_points_kill():
    """x32 (the 0x40000000 bit on a native syscall) and i386 (int 0x80) are other
    architectures to the filter: both kill, even for calls the list allows natively."""
    x32 = 0x40000000
    code = {"int 0x80 getpid": "b814000000cd80c3",  # mov eax, 20; int 0x80; ret
            "x32 getpid (syscall)": "b827000040" + "0f05c3"}  # mov eax, x32|39; syscall; ret
    cases = [["x32 getpid", x32 | 39, []], ["x32 read", x32 | 0, [0, 0, 0]],
             ["x32 write", x32 | 1, [1, 0, 0]], ["int 0x80 getpid", 0, []],
             ["x32 getpid (syscall)", 0, []]]
    control = probe(cases, code, program=b"")  # no filter: what the kernel itself does
    got = probe(cases, code)
    for label, _, _ in cases:
        if label == "int 0x80 getpid" and control[label] != "returned":
            continue  # this kernel has no i386 emulation: nothing to filter
        assert got[label] == "SIGSYS", (label, got[label], control[label])


def test_every_standard_library_module_imports_under_the_filter():
    """What CPython needs after set-up: importing any module of the standard library (some
    make system calls when imported: selectors an epoll instance, sysconfig a look at ~)
    is never a call the filter kills."""
    src = "class P:\n    def imp(self, name):\n        __import__(name)\n"
    names = sorted(n for n in sys.stdlib_module_names if not n.startswith("_"))
    with PolicyWorker(src, "P", SandboxLimits(memory_mb=1024, call_seconds=30)) as w:
        results = w.call([Call(0, "__init__")] + [Call(0, "imp", (n,)) for n in names])[1:]
        assert w.alive, w.dead_reason
    killed = [n for n, r in zip(names, results) if isinstance(r, Forfeit) and "seccomp" in r.detail]
    assert killed == []
    imported = [n for n, r in zip(names, results) if not isinstance(r, Forfeit)]
    assert len(imported) > 0.9 * len(names)  # the rest: Windows' modules, a hook refusal or two
