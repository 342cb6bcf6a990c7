"""The kernel layers a policy worker puts itself under before it reads any untrusted byte.

Standalone like ``_worker.py`` (the standard library and ctypes only; nothing from csro), and
run by the worker as its own first steps, while every line it executes is still ours:

``enter_namespaces``  new user (when not root), network, mount, pid, IPC, UTS and cgroup
                      namespaces; a fork so that the policy is pid 1 of its pid namespace
                      while the *keeper* (the process the parent started) waits for it and
                      passes its exit status or signal on unchanged;
``hide``              in the mount namespace: every mount made private (nothing propagates to
                      the host), a fresh ``/proc`` for the pid namespace, and empty read-only
                      tmpfs over ``/tmp``, ``$HOME`` and the other places users keep files;
``drop_capabilities`` what a user namespace gave (``CAP_SYS_ADMIN`` in it) is given up again;
``landlock``          a filesystem allow-list (read only the given directories and files;
                      nothing executed, written, created, removed, renamed, linked or
                      truncated), TCP bind/connect denied, signals and abstract Unix sockets
                      scoped to the sandbox (Landlock, ``Documentation/userspace-api/landlock``);
``seccomp``           a BPF program built by the parent with libseccomp (``_layers.py``) is
                      loaded with no_new_privs: denied system calls kill the worker (SIGSYS),
                      which the parent records as a forfeit of the policy.

Each returns what it applied, or raises ``LayerError`` naming what it could not do; the worker
decides whether that may be skipped (only when the user opted in by name).
"""

import ctypes
import os
import signal

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p)

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x2000000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAPBSET_DROP = 1, 38, 22, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SECCOMP_MODE_FILTER = 2
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
SYS_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self (same on every arch)

# Landlock access rights by the ABI version that introduced them.
FS_READ_FILE, FS_READ_DIR = 1 << 2, 1 << 3
_FS_BY_ABI = ((1, (1 << 13) - 1), (2, 1 << 13), (3, 1 << 14), (5, 1 << 15))
_NET_BY_ABI = ((4, 0b11),)  # bind_tcp, connect_tcp
_SCOPE_BY_ABI = ((6, 0b11),)  # abstract unix sockets, signals


class LayerError(Exception):
    """A kernel layer could not be applied; the message says which and why."""


def _check(rc, what):
    if rc < 0:
        err = ctypes.get_errno()
        raise LayerError("%s: %s" % (what, os.strerror(err)))
    return rc


def _prctl(*args):
    return _libc.prctl(*[ctypes.c_ulong(a) for a in args])


def prctl_pdeathsig():
    """Be killed (SIGKILL) when the parent process dies."""
    _check(_prctl(PR_SET_PDEATHSIG, signal.SIGKILL), "prctl(PR_SET_PDEATHSIG)")


# ---------------------------------------------------------------- namespaces

def enter_namespaces(root):
    """Unshare every namespace the kernel gives this caller and fork into the pid namespace.

    Returns (names, keeper_pid) in the child, which goes on as the worker; the keeper never
    returns. Raises LayerError before anything changed when the kernel refuses.
    """
    flags = CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    names = ["network", "mount", "pid", "ipc", "uts"]
    if not root:
        flags |= CLONE_NEWUSER
        names.insert(0, "user")
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(flags), "unshare(%s)" % "|".join(names))
    if not root:  # map ourselves to root of the new user namespace (needed to mount)
        for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", "0 %d 1" % uid),
                           ("/proc/self/gid_map", "0 %d 1" % gid)):
            with open(path, "w") as f:
                f.write(text)
    if _libc.unshare(CLONE_NEWCGROUP) == 0:  # not every kernel or container gives this one
        names.append("cgroup")
    keeper = os.getpid()
    child = os.fork()
    if child:
        _keep(child)
    prctl_pdeathsig()
    return names, keeper


def _keep(child):
    """The keeper: hold no channel, wait for the child, exit exactly as it did."""
    for fd in range(3, 256):
        try:
            os.close(fd)
        except OSError:
            pass
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def hide(paths):
    """Make every mount private, mount a fresh /proc, and lay an empty read-only tmpfs over
    each of ``paths`` that exists. Returns the paths replaced."""
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    hidden = []  # a /proc of the pid namespace, where the kernel allows one (not in containers
    # that mask parts of the host's /proc); the host's otherwise, in which we see only ourselves
    if _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0:
        hidden.append("/proc")
    for p in paths:
        if not os.path.isdir(p) or os.path.realpath(p) == "/":
            continue
        _check(_libc.mount(b"tmpfs", p.encode(), b"tmpfs",
                           MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, b"size=4k,mode=555"),
               "mount tmpfs on %s" % p)
        hidden.append(p)
    return hidden


def drop_capabilities():
    """Give up every capability (those a user namespace grants its first process)."""
    cap = 0
    while _prctl(PR_CAPBSET_DROP, cap) == 0:
        cap += 1
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice 32 bits, all 0
    nr = SYS_CAPSET.get(os.uname().machine)
    if nr is None:
        raise LayerError("capset: unknown system call number on %s" % os.uname().machine)
    _check(_libc.syscall(nr, header, data), "capset")


# ---------------------------------------------------------------- Landlock

class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


def landlock_abi():
    """The Landlock ABI version this kernel offers (0: none)."""
    v = _libc.syscall(SYS_LANDLOCK[0], None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return v if v > 0 else 0


def _rights(table, abi):
    bits = 0
    for since, b in table:
        if abi >= since:
            bits |= b
    return bits


def landlock(dir_fds, file_fds):
    """Restrict this process to reading the directories and files open as ``dir_fds`` and
    ``file_fds`` (and their contents), and to nothing else the ABI lets us name. Returns
    {"abi": N, "tcp": bool, "scoped": bool}."""
    abi = landlock_abi()
    if abi < 1:
        raise LayerError("Landlock is not offered by this kernel")
    attr = _RulesetAttr(_rights(_FS_BY_ABI, abi), _rights(_NET_BY_ABI, abi),
                        _rights(_SCOPE_BY_ABI, abi))
    rs = _check(_libc.syscall(SYS_LANDLOCK[0], ctypes.byref(attr),
                              ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0)),
                "landlock_create_ruleset")
    try:
        for fds, allowed in ((dir_fds, FS_READ_FILE | FS_READ_DIR), (file_fds, FS_READ_FILE)):
            for fd in fds:
                rule = _PathBeneath(allowed, fd)
                _check(_libc.syscall(SYS_LANDLOCK[1], ctypes.c_int(rs), ctypes.c_int(1),
                                     ctypes.byref(rule), ctypes.c_uint32(0)),
                       "landlock_add_rule")
        _check(_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(_libc.syscall(SYS_LANDLOCK[2], ctypes.c_int(rs), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(rs)
    return {"abi": abi, "tcp": attr.net != 0, "scoped": attr.scoped != 0}


# ---------------------------------------------------------------- seccomp

class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp(bpf):
    """Load a seccomp-bpf program (``struct sock_filter`` array as bytes) with no_new_privs."""
    if not bpf or len(bpf) % 8:
        raise LayerError("seccomp: no filter program was given")
    buf = ctypes.create_string_buffer(bytes(bpf), len(bpf))
    prog = _Fprog(len(bpf) // 8, ctypes.addressof(buf))
    _check(_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
           "prctl(PR_SET_SECCOMP)")
