"""A corpus of sandbox escape attempts, and a runner that checks each left no trace.

Each attempt is the body of a policy's ``act``; it plays the attack and returns "rock" so
that, were the attack to succeed, the match would go on as normal. The kinds follow the
escapes issue 25 saw (files read, the worker's stubs undone, files made/renamed/removed, Unix
sockets, exec, the parent's environment, persistence) and go beyond (ptrace, process_vm,
io_uring, bpf, namespaces, raw system calls), each tried in more than one way; issue 37 adds
the recorder (a refused operation caught, then its record attacked: cleared, rewritten,
flooded, its channel closed or replaced).

Run twice by ``test_escapes.py``: as the user running the tests (root in CI), and, when
that is root, as an ordinary user through ``python escapes.py`` (this file imports only
``csro.policies`` and the standard library, so it runs from a copy readable by that user).
Each attempt runs with the worker's Python layer (stubs and audit hook) on, and off, as an
attacker who switched it off would have it: the kernel layers alone must contain it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from csro.policies import Call, Forfeit, PolicyWorker, Reason, SandboxLimits, check_layers

from csro.policies._layers import LAYERS  # noqa: E402

SECRET = "sk-csro-escape-secret-5e1f"
LIBC = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "def ok(rc):  # a failed call raises as Python's own calls do\n"
        "    if rc < 0:\n        e = ctypes.get_errno()\n        raise OSError(e, os.strerror(e))\n"
        "    return rc\n")
# A refusal of the audit hook (os.fork: with the Python layer off, the seccomp filter kills it),
# caught and swallowed, then the recorder attacked; and how a policy finds the recorder channel
# (the one socket among its fds; or the worker's config, through the frames).
REFUSE = "def refuse():\n    try:\n        os.fork()\n    except BaseException as e:\n        return e\n"
SOCKETS = ("import stat\nsocks = []\nfor fd in range(3, 1024):\n    try:\n"
           "        if stat.S_ISSOCK(os.fstat(fd).st_mode):\n            socks.append(fd)\n"
           "    except OSError:\n        pass\n")
CFG_REC = ("f = sys._getframe()\nwhile f is not None:\n    if 'cfg' in f.f_locals:\n"
           "        rec = f.f_locals['cfg']['rec']\n    f = f.f_back\n")

# struct xattr_args {value, size, flags} for the *xattrat calls, over an 8-byte buffer "pwned..."
XATTR_ARGS = ("buf = ctypes.create_string_buffer(b'x' * 8)\n"
              "args = (ctypes.c_uint64 * 2)(ctypes.addressof(buf), 8)\n")
# Kinds whose attempts return what they read: one that returns at all got out.
READS = ("meta-read", "syscalls")

# (name, kind, body). Names in CAPITALS are filled in by the runner.
ATTEMPTS = [
    # -- reading what the policy was not given
    ("read_key_open", "read", "return open(KEY).read()"),
    ("read_key_os_open", "read", "fd = os.open(KEY, os.O_RDONLY)\nreturn os.read(fd, 200).decode()"),
    ("read_key_fileio", "read", "import io\nreturn io.FileIO(KEY).read().decode()"),
    ("read_key_via_proc_root", "read", "return open('/proc/self/root' + KEY).read()"),
    ("read_key_ctypes", "read", LIBC + "fd = ok(libc.open(KEY.encode(), 0))\nbuf = ctypes.create_string_buffer(200)\n"
     "ok(libc.read(fd, buf, 200))\nreturn buf.value.decode()"),
    ("read_world_readable", "read", "return open('/etc/passwd').read()"),
    ("read_via_the_python_path", "read", "p = [x for x in sys.path if os.path.isdir(x)][-1]\n"
     "return open(p + '/../../../../../../../../etc/passwd').read()"),
    ("read_after_chdir_to_the_python_path", "read", "os.chdir(sys.path[0])\n"
     "return open('../../../../../../../etc/passwd').read()"),
    ("list_home", "read", "return os.listdir(HOME)"),
    ("read_parent_environ", "read", "return open('/proc/%d/environ' % PPID, 'rb').read().decode()"),
    ("read_parent_cmdline_fd", "read", "return os.listdir('/proc/%d/fd' % PPID)"),
    ("read_parent_memory", "read", "f = open('/proc/%d/mem' % PPID, 'rb')\nreturn f.read(1).hex()"),
    # -- files made, changed or removed
    ("create_in_world_writable", "files", "open(WW + '/pwned', 'w').write('x')\nreturn 'rock'"),
    ("create_exclusive_os_open", "files", "os.open(WW + '/pwned', os.O_CREAT | os.O_EXCL | os.O_WRONLY)\nreturn 'rock'"),
    ("create_in_home", "files", "open(HOMEDIR + '/pwned', 'w')\nreturn 'rock'"),
    ("mkfifo_fresh_posix", "files", "import importlib.machinery, importlib.util\n"
     "m = importlib.util.module_from_spec(importlib.machinery.BuiltinImporter.find_spec('posix'))\n"
     "m.mkfifo(WW + '/fifo')\nreturn 'rock'"),
    ("mknod_ctypes", "files", LIBC + "ok(libc.mknod((WW + '/node').encode(), 0o10644, 0))\nreturn 'rock'"),
    ("mkdir", "files", "os.mkdir(WW + '/dir')\nreturn 'rock'"),
    ("rename_victim", "files", "os.rename(VICTIM, VICTIM + '.moved')\nreturn 'rock'"),
    ("unlink_victim", "files", "os.unlink(VICTIM)\nreturn 'rock'"),
    ("truncate_victim", "files", "os.truncate(VICTIM, 0)\nreturn 'rock'"),
    ("open_victim_for_update", "files", "open(VICTIM, 'r+').truncate(0)\nreturn 'rock'"),
    ("append_victim", "files", "open(VICTIM, 'a').write('pwned')\nreturn 'rock'"),
    ("symlink_in_world_writable", "files", "os.symlink('/etc/passwd', WW + '/link')\nreturn 'rock'"),
    ("hardlink_victim", "files", "os.link(VICTIM, WW + '/hardlink')\nreturn 'rock'"),
    ("chmod_victim", "files", "os.chmod(VICTIM, 0o777)\nreturn 'rock'"),
    ("utime_victim", "files", "os.utime(VICTIM, (0, 0))\nreturn 'rock'"),
    ("rename_ctypes", "files", LIBC + "ok(libc.rename(VICTIM.encode(), (WW + '/r').encode()))\nreturn 'rock'"),
    # -- persistence outside the sandbox
    ("bashrc_append", "persist", "open(HOME + '/.bashrc', 'a').write('\\n# ' + MARK + '\\n')\nreturn 'rock'"),
    ("bashrc_symlink", "persist", "os.symlink(WW + '/polyglot', HOMEDIR + '/.bashrc')\nreturn 'rock'"),
    ("pth_in_user_venv", "persist", "open(SITE + '/evil.pth', 'w').write('import os')\nreturn 'rock'"),
    # -- sockets
    ("unix_socket_in_tmp", "sockets", "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect(USOCK_WW)\nreturn 'rock'"),
    ("unix_socket_in_home", "sockets", "import _socket\ns = _socket.socket(_socket.AF_UNIX)\ns.connect(USOCK_HOME)\nreturn 'rock'"),
    ("unix_socket_ctypes", "sockets", LIBC + "ok(libc.socket(1, 1, 0))\nreturn 'rock'"),
    ("abstract_unix_socket", "sockets", "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('\\0' + ABSTRACT)\nreturn 'rock'"),
    ("tcp_loopback", "sockets", "import socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=1)\nreturn 'rock'"),
    ("udp_loopback", "sockets", "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', PORT))\nreturn 'rock'"),
    # -- starting anything
    ("exec_shell", "exec", "os.execv('/bin/sh', ['sh', '-c', 'touch ' + WW + '/exec'])"),
    ("exec_python", "exec", "os.execve(sys.executable, [sys.executable, '-c', 'open(%r, \"w\")' % (WW + '/exec')], {})"),
    ("posix_spawn", "exec", "os.posix_spawn('/bin/touch', ['touch', WW + '/exec'], {})\nreturn 'rock'"),
    ("fork_ctypes", "exec", LIBC + "if ok(libc.fork()) == 0:\n    os._exit(0)\nreturn 'rock'"),
    ("fork_by_machine_code", "exec", "import mmap, ctypes\n"
     "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
     "m.write(bytes([0xb8, 57, 0, 0, 0, 0x0f, 0x05, 0xc3]))  # mov eax, 57 (fork); syscall; ret\n"
     "code = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n"
     "if code() == 0:\n    os._exit(0)\nreturn 'rock'"),
    ("execve_ctypes", "exec", LIBC + "libc.execv(b'/bin/touch', (ctypes.c_char_p * 3)(b'touch', (WW + '/exec').encode(), None))\nreturn 'rock'"),
    # -- other processes of the user
    ("kill_victim", "processes", "os.kill(VICTIM_PID, signal.SIGKILL)\nreturn 'rock'"),
    ("killpg_victim", "processes", "os.killpg(VICTIM_PID, signal.SIGKILL)\nreturn 'rock'"),
    ("pidfd_kill_victim", "processes", "signal.pidfd_send_signal(os.pidfd_open(VICTIM_PID), signal.SIGKILL)\nreturn 'rock'"),
    ("kill_ctypes", "processes", LIBC + "ok(libc.kill(VICTIM_PID, 9))\nreturn 'rock'"),
    ("ptrace_parent", "processes", LIBC + "ok(libc.ptrace(16, PPID, 0, 0))\nreturn 'rock'"),
    ("process_vm_readv_parent", "processes", LIBC + "ok(libc.syscall(310, PPID, 0, 0, 0, 0, 0))\nreturn 'rock'"),
    # -- the kernel's other doors
    ("unshare_user_namespace", "kernel", LIBC + "ok(libc.unshare(0x10000000))\nreturn 'rock'"),
    ("mount_tmpfs", "kernel", LIBC + "ok(libc.mount(b'x', b'/tmp', b'tmpfs', 0, None))\nreturn 'rock'"),
    ("io_uring_setup", "kernel", LIBC + "p = ctypes.create_string_buffer(120)\nok(libc.syscall(425, 4, p))\nreturn 'rock'"),
    ("bpf", "kernel", LIBC + "ok(libc.syscall(321, 0, None, 0))\nreturn 'rock'"),
    ("userfaultfd", "kernel", LIBC + "ok(libc.syscall(323, 0))\nreturn 'rock'"),
    ("keyctl", "kernel", LIBC + "ok(libc.syscall(250, 0, 0))\nreturn 'rock'"),
    # -- the recorder: a refusal, then its record attacked (every one must still be FORBIDDEN)
    ("recorder_clear_lists_in_frames", "recorder", REFUSE + "e = refuse()\nframes = []\n"
     "tb = e.__traceback__ if e is not None else None\nwhile tb is not None:\n"
     "    frames.append(tb.tb_frame)\n    tb = tb.tb_next\nf = sys._getframe()\nwhile f is not None:\n"
     "    frames.append(f)\n    f = f.f_back\nfor fr in frames:\n    for v in list(fr.f_locals.values()):\n"
     "        if type(v) is list:\n            v.clear()\nreturn 'rock'"),
    ("recorder_clear_lists_by_gc", "recorder", REFUSE + "refuse()\nimport gc\n"
     "for get in (gc.get_objects, lambda: gc.get_referrers(sys._getframe())):\n    try:\n"
     "        for o in get():\n            if type(o) is list:\n                o.clear()\n"
     "    except BaseException:\n        pass\nreturn 'rock'"),
    ("recorder_rewrite_hook_closure", "recorder", REFUSE + "e = refuse()\nif e is not None:\n"
     "    tb = e.__traceback__\n    while tb.tb_next is not None:\n        tb = tb.tb_next\n"
     "    for v in list(tb.tb_frame.f_locals.values()):\n"
     "        for c in getattr(v, '__closure__', None) or ():\n            try:\n"
     "                c.cell_contents = None\n            except BaseException:\n                pass\n"
     "        if type(v) is list and len(v) == 2:\n            v[:] = [0, 0]\n"
     "refuse()\nreturn 'rock'"),
    ("recorder_close_channel_found_in_frames", "recorder", CFG_REC + "os.close(rec)\n" + REFUSE
     + "refuse()\nreturn 'rock'"),
    ("recorder_dup2_devnull_over_channel", "recorder", SOCKETS + REFUSE
     + "null = os.open('/dev/null', os.O_RDONLY)\nsaved = [(fd, os.dup(fd)) for fd in socks]\n"
     "for fd in socks:\n    os.dup2(null, fd)\nrefuse()\nfor fd, dup in saved:\n    os.dup2(dup, fd)\n"
     "return 'rock'"),
    ("recorder_flood_with_fake_records", "recorder", SOCKETS + REFUSE + "for fd in socks:\n"
     "    os.set_blocking(fd, False)\n    try:\n        while True:\n"
     "            os.write(fd, b'0 0 a fake record of an answered batch')\n    except OSError:\n"
     "        pass\nrefuse()\nreturn 'rock'"),
    ("recorder_refuse_then_crash", "recorder", REFUSE + "refuse()\nos._exit(0)"),
    ("recorder_read_back_through_proc", "recorder", CFG_REC + REFUSE + "refuse()\ntry:\n"
     "    fd = os.open('/proc/self/fd/%d' % rec, os.O_RDONLY | os.O_NONBLOCK)\n"
     "    os.read(fd, 4096)\nexcept BaseException:\n    pass\nreturn 'rock'"),
    ("recorder_swap_channel_from_signal_handler", "recorder", SOCKETS + REFUSE
     + "null = os.open('/dev/null', os.O_RDONLY)\nsaved = {fd: os.dup(fd) for fd in socks}\n"
     "state = [0]\ndef swap(*a):\n    state[0] ^= 1\n    for fd in socks:\n"
     "        os.dup2(null if state[0] else saved[fd], fd)\n"
     "signal.signal(signal.SIGALRM, swap)\nsignal.setitimer(signal.ITIMER_REAL, 0.0001, 0.0001)\n"
     "for _ in range(2000):\n    refuse()\nsignal.setitimer(signal.ITIMER_REAL, 0)\n"
     "for fd in socks:\n    os.dup2(saved[fd], fd)\nreturn 'rock'"),
    # -- metadata of the host: each returns what it read (a contained attempt raises)
    ("stat_host_key", "meta-read", "return os.stat(KEY).st_size"),
    ("stat_host_file", "meta-read", "return [os.stat(VICTIM).st_ino, os.stat(WW).st_mtime]"),
    ("lstat_host_dir", "meta-read", "return os.lstat(HOMEDIR).st_ino"),
    ("stat_via_proc_self_root", "meta-read", "return os.stat('/proc/self/root' + KEY).st_size"),
    ("statx_ctypes", "meta-read", LIBC + "buf = ctypes.create_string_buffer(256)\n"
     "ok(libc.syscall(332, -100, KEY.encode(), 0, 0x7ff, buf))\nreturn buf.raw[:64].hex()"),
    ("readlink_host_link", "meta-read", "return os.readlink(LINK)"),
    ("getxattr_host_file", "meta-read", "return os.getxattr(VICTIM, 'user.csro').decode()"),
    ("listxattr_host_file", "meta-read", "return os.listxattr(VICTIM)"),
    ("getxattr_ctypes", "meta-read", LIBC + "buf = ctypes.create_string_buffer(64)\n"
     "n = ok(libc.getxattr(VICTIM.encode(), b'user.csro', buf, 64))\nreturn buf.raw[:n].decode()"),
    ("read_mount_table", "meta-read", "return open('/proc/self/mounts').read()"),
    ("read_mountinfo", "meta-read", "return open('/proc/self/mountinfo', 'rb').read().decode()"),
    ("read_proc_1", "meta-read", "return open('/proc/1/cmdline', 'rb').read().decode()"),
    ("list_proc", "meta-read", "return os.listdir('/proc')"),
    ("list_sys", "meta-read", "return os.listdir('/sys/class/net')"),
    # -- metadata of files changed (the World's snapshot has their ctime, mode and xattrs)
    ("setxattr_victim", "meta-write", "os.setxattr(VICTIM, 'user.pwned', b'x')\nreturn 'rock'"),
    ("removexattr_victim", "meta-write", "os.removexattr(VICTIM, 'user.csro')\nreturn 'rock'"),
    ("setxattr_ctypes", "meta-write", LIBC + "ok(libc.setxattr(VICTIM.encode(), b'user.pwned', b'x', 1, 0))\n"
     "return 'rock'"),
    ("lsetxattr_ctypes_python_file", "meta-write", LIBC + "ok(libc.lsetxattr(os.__file__.encode(), "
     "b'user.pwned', b'x', 1, 0))\nreturn 'rock'"),
    ("setflags_ioctl_victim", "meta-write", "import fcntl, struct\nfd = os.open(VICTIM, os.O_RDONLY)\n"
     "fcntl.ioctl(fd, 0x40086602, struct.pack('l', 0x40))  # FS_IOC_SETFLAGS: nodump\nreturn 'rock'"),
    ("setflags_ioctl_python_file", "meta-write", "import fcntl, struct\n"
     "fd = os.open(os.__file__, os.O_RDONLY)\nfcntl.ioctl(fd, 0x40086602, struct.pack('l', 0x40))\n"
     "return 'rock'"),
    ("chown_victim", "meta-write", "os.chown(VICTIM, os.getuid(), 0)\nreturn 'rock'"),
    ("chmod_python_file", "meta-write", "os.chmod(os.__file__, 0o777)\nreturn 'rock'"),
    ("utimensat_ctypes", "meta-write", LIBC + "ok(libc.utimensat(-100, VICTIM.encode(), None, 0))\nreturn 'rock'"),
    # -- system calls newer than the filter library's table, numbers no kernel has yet, and
    #    the 32-bit entry points (x86_64 numbers): each returns what it got
    ("getxattrat_raw", "syscalls", LIBC + XATTR_ARGS + "ok(libc.syscall(464, -100, VICTIM.encode(), 0, "
     "b'user.csro', args, 16))\nreturn buf.raw[:8].decode()"),
    ("setxattrat_raw", "syscalls", LIBC + XATTR_ARGS + "ok(libc.syscall(463, -100, VICTIM.encode(), 0, "
     "b'user.pwned', args, 16))\nreturn 'set'"),
    ("listxattrat_raw", "syscalls", LIBC + "buf = ctypes.create_string_buffer(64)\n"
     "n = ok(libc.syscall(465, -100, VICTIM.encode(), 0, buf, 64))\nreturn buf.raw[:n].decode()"),
    ("removexattrat_raw", "syscalls", LIBC + "ok(libc.syscall(466, -100, VICTIM.encode(), 0, b'user.csro'))\n"
     "return 'removed'"),
    ("file_getattr_raw", "syscalls", LIBC + "a = ctypes.create_string_buffer(24)\n"
     "ok(libc.syscall(468, -100, VICTIM.encode(), a, 24, 0))\nreturn a.raw.hex()"),
    ("file_setattr_raw", "syscalls", LIBC + "a = (ctypes.c_uint64 * 3)(0x80, 0, 0)  # FS_XFLAG_NODUMP\n"
     "ok(libc.syscall(469, -100, VICTIM.encode(), a, 24, 0))\nreturn 'set'"),
    ("open_tree_attr_raw", "syscalls", LIBC + "return ok(libc.syscall(467, -100, b'/', 1, None, 0))"),
    ("listmount_raw", "syscalls", LIBC + "req = (ctypes.c_uint64 * 3)(24, (1 << 64) - 1, 0)\n"
     "ids = (ctypes.c_uint64 * 64)()\nreturn ok(libc.syscall(458, req, ids, 64, 0))"),
    ("lsm_list_modules_raw", "syscalls", LIBC + "ids = (ctypes.c_uint64 * 16)()\n"
     "size = ctypes.c_uint32(128)\nreturn ok(libc.syscall(461, ids, ctypes.byref(size), 0))"),
    ("mseal_raw", "syscalls", LIBC + "buf = ctypes.create_string_buffer(8192)\n"
     "page = (ctypes.addressof(buf) + 4095) & ~4095\nreturn ok(libc.syscall(462, page, 4096, 0))"),
    ("beyond_the_table_raw", "syscalls", LIBC + "return [libc.syscall(nr, 0, 0, 0, 0, 0, 0) "
     "for nr in range(470, 1001)][-1]"),
    ("x32_getpid_raw", "syscalls", LIBC + "return ok(libc.syscall(0x40000000 | 39))"),
    ("int80_machine_code", "syscalls", "import mmap, ctypes\n"
     "m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
     "m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))  # mov eax, 20 (i386 getpid); int 0x80; ret\n"
     "return ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()"),
]

# System-call numbers and machine code above are x86-64's: elsewhere those attempts would test
# other calls (or crash), so they are left out there.
if os.uname().machine != "x86_64":
    ATTEMPTS = [a for a in ATTEMPTS if "libc.syscall(" not in a[2] and "0x0f, 0x05" not in a[2]
                and "0xcd, 0x80" not in a[2]]
KINDS = {name: kind for name, kind, _ in ATTEMPTS}


class World:
    """What a policy must not read, change, reach or touch, made as the current user.

    Its home is a directory of its own standing in for the user's (mode 0700, outside every
    path the sandbox allows, like ``~``): the suite's other tests, running beside this one,
    make entries in the real ``~`` (caches, configs) while an attempt runs, which a listing
    of it would blame on the attempt."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:12]
        self.mark = "csro-escape-" + tag
        self.home = os.path.realpath(tempfile.mkdtemp(prefix="csro-home-"))  # no mark: an error may name it
        self.homedir = os.path.join(self.home, "." + self.mark)
        self.ww = tempfile.mkdtemp(prefix=self.mark + "-")
        os.chmod(self.ww, 0o1777)
        os.makedirs(self.homedir, mode=0o700)
        self.key = os.path.join(self.homedir, "id_key")
        self._write(self.key, SECRET, 0o600)
        self.victim = os.path.join(self.ww, "victim.txt")
        self._write(self.victim, "still here", 0o666)
        os.setxattr(self.victim, "user.csro", b"keep")  # ext4 and tmpfs both keep user xattrs
        self.link = os.path.join(self.ww, "link")
        os.symlink(self.key, self.link)
        self.site = os.path.join(self.homedir, "venv", "lib", "python3.11", "site-packages")
        os.makedirs(self.site)
        self.proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
        self.listeners = []
        tcp = socket.socket()
        tcp.bind(("127.0.0.1", 0))
        self.port = tcp.getsockname()[1]
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", self.port))
        self.usock_ww = os.path.join(self.ww, "s.sock")
        self.usock_home = os.path.join(self.homedir, "s.sock")
        for s in (tcp, self._unix(self.usock_ww), self._unix(self.usock_home),
                  self._unix("\0" + self.mark)):
            s.listen(8)
            s.setblocking(False)
            self.listeners.append(s)
        udp.setblocking(False)
        self.udp = udp
        os.environ["CSRO_ESCAPE_SECRET"] = SECRET
        self.before: dict = {}
        self.before = self._snapshot()

    @staticmethod
    def _write(path: str, text: str, mode: int) -> None:
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    @staticmethod
    def _unix(path: str) -> socket.socket:
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        if not path.startswith("\0"):
            os.chmod(path, 0o777)
        return s

    def names(self) -> dict:
        return {"KEY": self.key, "HOME": self.home, "HOMEDIR": self.homedir, "WW": self.ww,
                "VICTIM": self.victim, "LINK": self.link, "SITE": self.site, "MARK": self.mark, "PORT": self.port,
                "USOCK_WW": self.usock_ww, "USOCK_HOME": self.usock_home, "ABSTRACT": self.mark,
                "VICTIM_PID": self.proc.pid, "PPID": os.getpid()}

    def _snapshot(self) -> dict:
        def meta(p):  # ctime moves with every change of metadata (xattrs, flags, owner)
            st = os.lstat(p)
            xattrs = {} if os.path.islink(p) else {n: os.getxattr(p, n) for n in os.listxattr(p)}
            return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                    st.st_uid, st.st_gid, sorted(xattrs.items()))

        def tree(d):
            out = {}
            for root, dirs, files in os.walk(d):
                for n in dirs + files:
                    p = os.path.join(root, n)
                    out[p] = meta(p)
            return out
        bashrc = os.path.join(self.home, ".bashrc")
        return {"ww": tree(self.ww), "homedir": tree(self.homedir), "home": sorted(os.listdir(self.home)),
                "shm": _lasting_entries("/dev/shm", self.before.get("shm")),
                "bashrc": open(bashrc).read() if os.path.exists(bashrc) else None,
                "victim": open(self.victim).read(), "key": open(self.key).read(),
                "python": meta(os.__file__)}

    def problems(self) -> list[str]:
        """Every trace an attempt left: changed files, a dead victim, an accepted connection.
        The World is then taken as it is now, so that one trace is not blamed on the next."""
        found = []
        now = self._snapshot()
        for k, v in self.before.items():
            if now[k] != v:
                found.append(f"{k} changed")
        self.before = now
        if self.proc.poll() is not None:
            found.append("the victim process was killed")
            self.proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
        for s in self.listeners:
            try:
                s.accept()[0].close()
                found.append(f"a connection reached {s.getsockname()!r}")
            except BlockingIOError:
                pass
        try:
            self.udp.recv(16)
            found.append("a datagram reached the UDP port")
        except BlockingIOError:
            pass
        return found

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for s in self.listeners + [self.udp]:
            s.close()
        shutil.rmtree(self.ww, ignore_errors=True)
        shutil.rmtree(self.home, ignore_errors=True)


def _lasting_entries(directory: str, before: list[str] | None) -> list[str]:
    """The names in ``directory`` that are there in two listings 20 ms apart (one listing when
    it is ``before``). ``/dev/shm`` is the host's: beside the suite's other worker, Python's
    multiprocessing creates named semaphores there and unlinks them at once (``sem.*``, seen
    in the fast loop); a trace an attempt left in it is still there when its worker is gone."""
    if not os.path.isdir(directory):
        return []
    first = sorted(os.listdir(directory))
    if first == before:
        return first
    time.sleep(0.02)
    return sorted(set(first) & set(os.listdir(directory)))


def source(body: str, names: dict) -> str:
    consts = "".join(f"{k} = {v!r}\n" for k, v in names.items())
    body = "\n".join("        " + ln for ln in body.splitlines())
    return (f"import os, sys, signal\n{consts}class P:\n    def __init__(self):\n        pass\n"
            f"    def act(self):\n{body}\n")


LIMITS = SandboxLimits(memory_mb=512, cpu_seconds=20, call_seconds=5.0, start_seconds=20)


def attempt(world: World, name: str, body: str, python_layer: bool,
            layers: tuple[str, ...] = LAYERS) -> dict:
    """Run one attempt; its outcome and every trace it left (none, if contained)."""
    with PolicyWorker(source(body, world.names()), "P", LIMITS, layers=layers,
                      python_layer=python_layer) as w:
        started = w.start()
        result = started if started is not None else w.call([Call(0, "__init__"), Call(0, "act")])[1]
        output = w.output()
    problems = world.problems()
    shown = repr(result) + output
    if SECRET in shown or "PATH=" in shown:  # the worker's own environment has no PATH
        problems.append("the secret or another process's environment was read")
    if "root:x:0:0" in shown:
        problems.append("/etc/passwd was read")
    if world.mark in shown and name == "list_home":
        problems.append("$HOME was listed")
    forfeit = isinstance(result, Forfeit)
    if KINDS.get(name) in READS and not forfeit:
        problems.append(f"it read what it asked for: {result!r}"[:300])
    return {"name": name, "kind": KINDS.get(name), "python_layer": python_layer, "problems": problems,
            "reason": result.reason.value if forfeit else None,
            "detail": result.detail[-300:] if forfeit else repr(result)[:300]}


def run(python_layers=(True, False), only=None) -> list[dict]:
    world = World()
    try:
        return [attempt(world, name, body, on) for name, _, body in ATTEMPTS
                if only is None or name in only for on in python_layers]
    finally:
        world.close()


# The rows of docs/sandbox.md's tables: one attempt of each kind that matters to a reader.
TABLE_ROWS = ("read_key_open", "read_world_readable", "read_parent_environ",
              "create_in_world_writable", "bashrc_symlink", "unix_socket_in_tmp", "tcp_loopback",
              "abstract_unix_socket", "execve_ctypes", "kill_victim", "stat_host_file",
              "read_mount_table", "setxattr_victim", "getxattrat_raw")
TABLE_COLUMNS = (("none", ()),) + tuple((name, (name,)) for name in LAYERS) + (("all", LAYERS),)


def layer_table() -> dict[str, dict[str, bool]]:
    """Which layer, alone (Python layer off), holds each row's attempt: no trace left, in a
    World of its own (a file one attempt made changes what the next can do)."""
    bodies = {n: b for n, _, b in ATTEMPTS}

    def held(row, layers):
        world = World()
        try:
            return not attempt(world, row, bodies[row], False, layers)["problems"]
        finally:
            world.close()
    return {row: {col: held(row, layers) for col, layers in TABLE_COLUMNS} for row in TABLE_ROWS}


def markdown_table(table: dict[str, dict[str, bool]]) -> str:
    """``layer_table`` as docs/sandbox.md shows it."""
    cols = [c for c, _ in TABLE_COLUMNS]
    heads = {"none": "no kernel layer", "all": "all three"}
    lines = ["| attempt | " + " | ".join(heads.get(c, f"{c} alone") for c in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for row, cells in table.items():
        lines.append(f"| `{row}` | " + " | ".join("held" if cells[c] else "**got out**" for c in cols) + " |")
    return "\n".join(lines) + "\n"


def verdict(outcome: dict) -> list[str]:
    """What is wrong with one outcome: any trace, or an attempt not recorded as a forfeit.
    (Every attempt here lets the denial propagate, so each must be a recorded forfeit: a
    FORBIDDEN one, or a path absent from the worker's own root: with the Python layer off,
    where the hook would have refused it, and for the host's metadata, whose reads (stat,
    readlink) raise no audit event: the sandbox cannot tell them from a policy's own typo.
    A system call by raw number with the Python layer off must be the filter's kill.)"""
    wrong = list(outcome["problems"])
    if outcome["kind"] == "syscalls" and not outcome["python_layer"]:  # the filter's to stop
        if not outcome["detail"].startswith("the seccomp layer stopped a forbidden system call"):
            wrong.append(f"not killed by the seccomp filter: {outcome['reason']}: "
                         f"{outcome['detail']}")
        return wrong
    ok = outcome["reason"] == Reason.FORBIDDEN.value or (
        (not outcome["python_layer"] or outcome["kind"] == "meta-read")
        and outcome["reason"] == Reason.EXCEPTION.value
        and "No such file or directory" in outcome["detail"])
    if not ok:
        wrong.append(f"not recorded as a forfeit of the sandbox: {outcome['reason']}: "
                     f"{outcome['detail']}")
    return wrong


if __name__ == "__main__":  # as an ordinary user: the outcomes as JSON on stdout
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    print(json.dumps({"uid": os.getuid(), "layers": check_layers(), "outcomes": run(),
                      "table": layer_table()}))
    sys.stdout.flush()
