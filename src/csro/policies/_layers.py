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
import tempfile
from functools import lru_cache

from csro.errors import SandboxError

LAYERS = ("namespaces", "landlock", "seccomp")
ENV_ALLOW_MISSING = "CSRO_SANDBOX_ALLOW_MISSING"

HOLDS = {
    "namespaces": "new user (when not root), network, mount, pid, IPC and UTS namespaces: no "
                  "network interface but a down loopback, no other process visible, an empty "
                  "read-only /tmp and no view of $HOME or other users' files",
    "landlock": "a filesystem allow-list: only the Python installation and the policy's allowed "
                "imports can be read; nothing is executed, written, created, removed, renamed, "
                "linked or truncated; TCP bind/connect denied; signals and abstract Unix "
                "sockets scoped to the sandbox",
    "seccomp": "a system-call filter (no_new_privs): sockets of every family (pathname Unix "
               "sockets included), exec, fork and threads, ptrace and process_vm_*, signals to "
               "any process, io_uring, userfaultfd, bpf, perf_event_open, keyctl, namespace and "
               "mount calls, file creation, removal and metadata changes kill the worker",
}

# System calls the filter answers by killing the worker (SIGSYS). Grouped for the docs; a name
# the running libseccomp or architecture does not know is skipped (it cannot be called here).
DENIED = {
    "processes": "execve execveat fork vfork clone clone3 ptrace process_vm_readv "
                 "process_vm_writev process_madvise kcmp pidfd_open pidfd_getfd "
                 "pidfd_send_signal kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo",
    "sockets and IPC": "socket socketpair shmget shmat shmctl msgget msgsnd msgrcv msgctl semget "
                       "semop semctl semtimedop mq_open mq_unlink mq_timedsend mq_timedreceive "
                       "mq_notify mq_getsetattr",
    "files": "mknod mknodat link linkat symlink symlinkat unlink unlinkat rename renameat "
             "renameat2 rmdir mkdir mkdirat truncate ftruncate chmod fchmod fchmodat fchmodat2 "
             "chown fchown lchown fchownat utime utimes utimensat futimesat setxattr lsetxattr "
             "fsetxattr removexattr lremovexattr fremovexattr open_by_handle_at "
             "name_to_handle_at fanotify_init",
    "kernel": "io_uring_setup io_uring_enter io_uring_register userfaultfd bpf perf_event_open "
              "keyctl add_key request_key unshare setns mount umount2 pivot_root chroot "
              "mount_setattr open_tree move_mount fsopen fsconfig fsmount fspick kexec_load "
              "kexec_file_load init_module finit_module delete_module reboot swapon swapoff acct "
              "quotactl quotactl_fd syslog vhangup iopl ioperm sethostname setdomainname "
              "settimeofday clock_settime clock_adjtime adjtimex uselib personality",
}

# Where users keep files: each is hidden behind an empty read-only tmpfs in the worker's mount
# namespace (the Python installation stays reachable through directory fds opened before).
_HIDE = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/home", "/root", "/mnt", "/media", "/srv")


def hidden_paths() -> list[str]:
    """The directories hidden in the worker's mount namespace: the usual ones and $HOME."""
    paths = list(_HIDE)
    home = os.path.expanduser("~")
    if home not in paths and home != "/":
        paths.append(home)
    return paths


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
    return {
        "namespaces": f"missing: {missing['namespaces']}" if "namespaces" in missing else
        f"{', '.join(layers.get('namespaces', []))}; hidden: {', '.join(layers.get('hidden', []))}",
        "landlock": f"missing: {missing['landlock']}" if "landlock" in missing else
        f"ABI {ll.get('abi')}; files" + (", TCP" if ll.get("tcp") else " (no TCP rules)")
        + (", signal and abstract-socket scopes" if ll.get("scoped") else " (no scopes)"),
        "seccomp": f"missing: {missing['seccomp']}" if "seccomp" in missing else
        f"{sum(len(v.split()) for v in DENIED.values())} system calls kill the worker",
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
    """The worker's seccomp-bpf program (``struct sock_filter`` array), built once.

    Raises SandboxError when libseccomp (Debian's ``libseccomp2``) or its binding is missing.
    """
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError, OSError) as e:  # the binding raises when the C library is missing
        raise SandboxError(f"libseccomp is not available ({e})") from e
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)  # i386 and x32 entry points too
    for names in DENIED.values():
        for name in names.split():
            try:
                f.add_rule(sc.KILL_PROCESS, name)
            except (ValueError, OSError):  # unknown to this libseccomp or architecture
                continue
    f.add_rule(sc.KILL_PROCESS, "prlimit64", sc.Arg(0, sc.NE, 0))  # limits of other processes
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        program = out.read()
    if not program or len(program) % 8:
        raise SandboxError("libseccomp exported an empty seccomp program")
    return program
