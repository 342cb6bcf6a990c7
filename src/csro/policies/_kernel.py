"""The kernel layers a policy worker puts itself under before it reads any untrusted byte.

Standalone like ``_worker.py`` (the standard library and ctypes only; nothing from csro), and
run by the worker as its own first steps, while every line it executes is still ours:

``enter_namespaces``  new user (when not root), network, mount, pid, IPC, UTS, cgroup and time
                      namespaces (a host name and boot and monotonic clocks of its own, not
                      the host's); a fork so that the policy is pid 1 of its pid namespace
                      while the *keeper* (the process the parent started) waits for it and
                      passes its exit status or signal on unchanged;
``own_root``          in the mount namespace: every mount made private (nothing propagates to
                      the host), then a root of the worker's own: a fresh tmpfs holding only
                      the paths it may read, each bind-mounted read-only at its own path (the
                      symbolic links met on the way recreated), entered with ``pivot_root``,
                      the host's root detached; no ``/proc``, ``/sys`` or anything else, so
                      not even the metadata of the host's files (``stat``, ``readlink``,
                      extended attributes, the mount table) can be read;
``drop_capabilities`` what a user namespace gave (``CAP_SYS_ADMIN`` in it) is given up again;
``landlock``          a filesystem allow-list (read only the given directories and files;
                      nothing executed, written, created, removed, renamed, linked or
                      truncated), TCP bind/connect denied, signals and abstract Unix sockets
                      scoped to the sandbox (Landlock, ``Documentation/userspace-api/landlock``);
``seccomp``           a BPF program built by the parent with libseccomp from an allow-list
                      (``_layers.py``, ``seccomp_allow.toml``) is loaded with no_new_privs:
                      any call outside the list kills the worker (SIGSYS), which the parent
                      records as a forfeit of the policy.

Each returns what it applied, or raises ``LayerError`` naming what it could not do; the worker
decides whether that may be skipped (only when the user opted in by name).
"""

import ctypes
import os
import signal
import time

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p)

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x2000000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
CLONE_NEWTIME = 0x80
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 0x4000, 0x40000
MS_REMOUNT, MS_BIND, MS_NOATIME, MS_NODIRATIME = 0x20, 0x1000, 0x400, 0x800
MS_RELATIME, MS_STRICTATIME = 0x200000, 0x1000000
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAPBSET_DROP = 1, 38, 22, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SECCOMP_MODE_FILTER = 2
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
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
    _check(_libc.sethostname(b"sandbox", ctypes.c_size_t(7)), "sethostname")  # not the host's
    if _libc.unshare(CLONE_NEWCGROUP) == 0:  # not every kernel or container gives this one
        names.append("cgroup")
    if _libc.unshare(CLONE_NEWTIME) == 0 and _clocks_from_zero():  # nor this one (Linux 5.6)
        names.append("time")
    keeper = os.getpid()
    child = os.fork()
    if child:
        _keep(child)
    prctl_pdeathsig()
    return names, keeper


def _clocks_from_zero():
    """Offsets for the time namespace the child will enter, so that its monotonic and boot
    clocks start near zero rather than telling the host's uptime. Only before the first
    process enters it; False where the kernel refuses."""
    offsets = "".join("%s %d 0\n" % (name, 1 - int(time.clock_gettime(clock)))
                      for name, clock in (("monotonic", time.CLOCK_MONOTONIC),
                                          ("boottime", time.CLOCK_BOOTTIME)))
    try:
        with open("/proc/self/timens_offsets", "w") as f:
            f.write(offsets)
    except OSError:
        return False
    return True


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


def own_root(paths):
    """Enter a root holding only ``paths`` (directories and files, absolute; symbolic links on
    the way to each are recreated, the real path is bind-mounted read-only) and detach the
    host's. The new root is a read-only tmpfs mounted over the working directory. Returns
    the real paths mounted, in order (``/`` itself is never one of them)."""
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    new = os.getcwd()
    _check(_libc.mount(b"tmpfs", new.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                       b"size=1m,mode=755"), "mount tmpfs on %s" % new)
    mounted = []
    for p in paths:
        real = _mirror_links(new, p)
        if real == "/" or not os.path.exists(real) or any(
                (real + "/").startswith(m + "/") for m in mounted):
            continue  # never the host's root; a path inside one mounted already is there
        target = new + real
        if os.path.isdir(real):
            os.makedirs(target, 0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))
        _check(_libc.mount(real.encode(), target.encode(), None, MS_BIND, None),
               "bind-mount %s" % real)
        _check(_libc.mount(None, target.encode(), None,
                           MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | _kept_flags(real), None),
               "remount %s read-only" % real)
        mounted.append(real)
    _check(_libc.mount(None, new.encode(), None,
                       MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
           "remount the new root read-only")
    os.chdir(new)
    nr = SYS_PIVOT_ROOT.get(os.uname().machine)
    if nr is None:
        raise LayerError("pivot_root: unknown system call number on %s" % os.uname().machine)
    _check(_libc.syscall(nr, b".", b"."), "pivot_root")  # the old root now lies on top of
    _check(_libc.umount2(b".", MNT_DETACH), "detach the host's root")  # the new: detach it
    os.chdir("/")
    return mounted


def _mirror_links(new, path, depth=0):
    """Recreate under ``new`` every symbolic link met while resolving ``path`` (``/lib`` ->
    ``usr/lib``, say, so that the loader's paths resolve as on the host); its real path."""
    if depth > 40:  # the kernel's own limit on links followed
        raise LayerError("too many symbolic links on the way to %s" % path)
    cur = "/"
    for part in path.strip("/").split("/"):
        host = os.path.join(cur, part)
        if os.path.islink(host):
            inside = new + host
            if not os.path.lexists(inside):
                os.makedirs(os.path.dirname(inside), 0o755, exist_ok=True)
                os.symlink(os.readlink(host), inside)
            _mirror_links(new, os.path.join(cur, os.readlink(host)), depth + 1)  # its links too
            host = os.path.realpath(host)
        cur = host
    return cur


# statvfs flag -> mount flag, for the flags a bind mount in a user namespace must keep
_KEEP = ((os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC), (os.ST_NODIRATIME, MS_NODIRATIME))


def _kept_flags(path):
    """The flags of ``path``'s mount that a read-only remount must repeat (a user namespace
    may not clear them): nodev, noexec and the atime mode. Files other than devices also
    get nodev and noexec."""
    st = os.statvfs(path).f_flag
    flags = 0
    for st_bit, ms_bit in _KEEP:
        if st & st_bit:
            flags |= ms_bit
    flags |= MS_NOATIME if st & os.ST_NOATIME else MS_RELATIME if st & os.ST_RELATIME \
        else MS_STRICTATIME
    if os.path.isfile(path):
        flags |= MS_NODEV | MS_NOEXEC
    elif not os.path.isdir(path):  # a device node: keeps what its mount allows, never exec
        flags |= MS_NOEXEC
    return flags


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
