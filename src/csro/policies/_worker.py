"""The sandboxed policy worker: one process per policy, driven by ``PolicyWorker``.

A standalone script (it imports nothing from csro but its sibling ``_kernel.py``), started
by the parent as ``python -P -s _worker.py CONFIG_JSON`` with an empty environment (plus fixed
thread-count and hash-seed variables), stdin from /dev/null, stdout+stderr into a pipe the
parent drains, an empty read-only working directory, two dedicated pipes (request in,
reply out) and the write end of the *recorder* channel, passed by fd number in CONFIG_JSON.
``-P -s`` rather than ``-I``: the parent builds the whole environment itself, and leaving out
``-E`` is what lets it fix PYTHONHASHSEED.

Before it reads the policy source, the worker, in this order (``_setup``):

1. sets rlimits: address space, CPU time (hard limit one second later), no core files, no
   file growth (RLIMIT_FSIZE 0), a small fd table;
2. enters new namespaces and forks into the pid namespace; the process the parent started
   stays behind as the *keeper*, holding no channel, and exits as the policy's process does;
3. enters a root of its own (``_kernel.own_root``): the Python path, the loader's library
   directories, /dev/null, /dev/urandom and /etc/ld.so.cache bind-mounted read-only into
   a fresh tmpfs, the host's root detached, no /proc, $HOME set to that root (``~`` is then
   no user-database lookup, which the seccomp filter would kill); then opens the same paths for
   Landlock's rules (without a root of its own, when the namespaces layer is allowed to be
   missing, imports go through these fds as ``/proc/self/fd/N``: a dropped uid may not
   traverse the Python path);
4. as root, drops to a uid/gid of its own (2e9 + the keeper's pid); otherwise gives up the
   capabilities its user namespace gave it; sets RLIMIT_NPROC 0;
5. replaces the few process/file primitives that raise no audit event by stubs that do;
6. restricts itself with Landlock, closes the fds of step 3 (all of them, with a root of
   its own), and loads the parent's seccomp program (no_new_privs; an allow-list,
   ``seccomp_allow.toml``);
7. routes the ``random`` module (and NumPy's global generator, once imported) to per-instance
   streams (``_streams``), so that a match's result depends on its seed alone;
8. installs an audit hook that refuses and records forbidden operations: before it raises
   PermissionError in the policy, it sends the record to the parent on the recorder channel
   (``_make_hook``), so the call is FORBIDDEN even if the policy swallows the exception or
   rewrites any object of this process afterwards;
9. sends ``["ready", layers applied]``. Only then is policy code compiled and run.

A layer it cannot apply ends it with status 72 and a line naming the layer (the parent's
fail-closed error), unless the parent's config allows that layer to be missing. The kernel
layers are the boundary; the audit hook is the recorder and defence in depth (PEP 578: crafted
bytecode can defeat it).

Protocol: frames are a 4-byte big-endian length and a UTF-8 JSON body.
  parent -> worker   [0, source, class_name]            compile (once, first)
                     [seq, [[instance, method, args], ...]]
                            method "__init__" makes an instance, args [seed] or []: random
                            streams of its own (_streams), and a fresh copy of the module
                            unless no state can pass through it (_sharing)
  worker -> parent   ["ready", {layer: what was applied, ..., "missing": {...}}]
                     [seq, [value, ...], [[index, reason, detail], ...]]
                            one value per call (null for a failed call), then the failures
                     [seq, reason, detail]  fatal: the worker exits after sending it
  recorder channel   b"SEQ INDEX DETAIL", one SOCK_SEQPACKET message per refusal (the batch
                     and the call it happened in, 0 0 for the module's first run); the parent
                     reads it, the worker can only write it (a socket: no reopening through
                     /proc/self/fd to read it back)
"""

import ast
import gc
import signal
import sys
import os
import json
import json.decoder
import json.encoder
import resource
import traceback
import linecache
import types

# Pre-imported (cheap) so that policies get them without touching the disk; ctypes is here
# because numpy imports it, and every ctypes operation is refused by the audit hook anyway.
import math, random, collections, itertools, functools, heapq, bisect, re, string  # noqa: E401,F401
import typing, dataclasses, enum, copy, operator, ctypes  # noqa: E401,F401
import _posixsubprocess  # loaded here only to be replaced by a stub below

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _kernel  # noqa: E402  the kernel layers (standalone, like this file)
import _streams  # noqa: E402  the random streams of each policy instance (standalone too)
import _sharing  # noqa: E402  whether instances may share one run of the module (standalone too)
del sys.path[0], sys.modules["_kernel"], sys.modules["_streams"], sys.modules["_sharing"]


def _cache_own_source(*modules):
    """Keep the source of the worker's own files in linecache (mtime None: never checked
    again), read now, before the sandbox hides them: a policy's traceback may pass through
    them, and formatting it must not try to open a file (the audit hook would record a
    refusal against the call)."""
    for m in modules:
        path = m.__file__
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        linecache.cache[path] = (sum(map(len, lines)), None, lines, path)


_cache_own_source(sys.modules[__name__], _kernel, _streams, _sharing)

EXIT_SETUP, EXIT_CHANNEL, EXIT_LAYER, EXIT_RECORDER = 70, 71, 72, 73
UID_BASE = 2_000_000_000
MAX_DEPTH = 64
DETAIL_CHARS = 1500
RECORD_BYTES = 1024  # one recorder message at most (the parent reads 4096)


# ---------------------------------------------------------------- setup (trusted code)

def _limit(which, soft, hard=None):
    resource.setrlimit(which, (soft, soft if hard is None else hard))


def _setup(cfg):
    """Everything before the policy: rlimits, the kernel layers, the stubs. Returns (the paths
    the audit hook lets the policy read, the layers applied as the ready frame reports them)."""
    mem = cfg["memory_mb"] * 1024 * 1024
    _limit(resource.RLIMIT_AS, mem)
    _limit(resource.RLIMIT_CPU, cfg["cpu_seconds"], cfg["cpu_seconds"] + 1)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_FSIZE, 0)
    _limit(resource.RLIMIT_NOFILE, 64)
    try:  # headroom for reading and compiling the policy, or the limit is unusable (address
        bytes(16 * 1024 * 1024)  # space only: calloc maps fresh zero pages, nothing is touched)
    except MemoryError:
        raise RuntimeError("memory_mb=%d leaves no room to run a policy" % cfg["memory_mb"])
    sys.dont_write_bytecode = True
    root = os.geteuid() == 0
    if cfg["pdeathsig"]:  # die with the parent
        _kernel.prctl_pdeathsig()
        if os.getppid() != cfg["ppid"]:
            os._exit(EXIT_SETUP)
    applied, want = {}, cfg["layers"]
    keeper = os.getpid()  # the process the parent started (not pid 1 of a pid namespace)
    if "namespaces" in want:
        names, keeper = _layer(cfg, "namespaces", _kernel.enter_namespaces, root) or ([], keeper)
        applied["namespaces"] = names

    # The worker's own root: the Python path, the system libraries and the few files it
    # needs, read-only, and nothing else of the host (not even for stat or readlink).
    entries = [p for p in sys.path if os.path.isdir(p)]  # as on sys.path (links recreated)
    real = []
    for p in entries:
        rp = os.path.realpath(p)
        if rp not in real:
            real.append(rp)
    lib_dirs = [d for d in _lib_dirs() if os.path.isdir(d)]
    read_files = [f for f in _READ_FILES if os.path.exists(f)]
    rooted, applied["root"] = False, []
    if applied.get("namespaces"):
        mounted = _layer(cfg, "namespaces", _kernel.own_root, entries + lib_dirs + read_files)
        if mounted is not None:
            applied["root"], rooted = mounted, True
            os.environ["HOME"] = "/"  # ~ is the empty root: not a user-database lookup (NSS
            # would load libraries and make calls the seccomp filter kills; sysconfig does it)
    # Landlock's rules are made from fds of the same paths (opened inside the new root where
    # there is one). Without a root of its own, the Python path stays reachable through these
    # fds (a dropped uid may not traverse it): imports go through /proc/self/fd/N from here on.
    dirs = [(rp, os.open(rp, os.O_RDONLY | os.O_DIRECTORY)) for rp in real]
    files = [os.open(f, os.O_RDONLY) for f in read_files]
    libs = [os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            for d in sorted({os.path.realpath(d) for d in lib_dirs})]
    if root:  # a uid/gid of its own, so that the kernel keeps it from every other process
        uid = UID_BASE + keeper
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise RuntimeError("could not drop privileges")
    elif applied.get("namespaces"):  # root of its own user namespace: give that up
        _layer(cfg, "namespaces", _kernel.drop_capabilities)
    aliases = [] if rooted else [(rp, "/proc/self/fd/%d" % fd) for rp, fd in dirs]
    if aliases:
        sys.path[:] = [alias for _, alias in aliases]
    for mod in list(sys.modules.values()) if aliases else ():  # packages imported before
        path = getattr(mod, "__path__", None)
        if type(path) is list:
            for i, entry in enumerate(path):
                for rp, alias in aliases:
                    if type(entry) is str and (entry + "/").startswith(rp + "/"):
                        path[i] = alias + entry[len(rp):]
    _limit(resource.RLIMIT_NPROC, 0)
    if cfg["pdeathsig"] or keeper != os.getpid():  # die with the keeper or the parent
        _kernel.prctl_pdeathsig()  # (again: a uid change clears it)
    # Unaudited primitives (file creation, signals by pidfd, threads) become stubs that raise
    # an audit event the hook refuses, so that trying them is recorded as FORBIDDEN.
    if cfg["python_layer"]:
        _guard_fresh_modules()
    for mod, names in () if not cfg["python_layer"] else ((os, ("mkfifo", "mknod", "pidfd_open")),
                       (sys.modules.get("posix"), ("mkfifo", "mknod", "pidfd_open")),
                       (sys.modules.get("signal"), ("pidfd_send_signal",)),
                       (sys.modules.get("_signal"), ("pidfd_send_signal",)),
                       (_posixsubprocess, ("fork_exec",)),
                       (sys.modules.get("_thread"), ("start_new_thread", "start_new")),
                       (sys.modules.get("threading"), ("_start_new_thread",))):
        for name in names:
            if mod is not None and hasattr(mod, name):
                setattr(mod, name, _stub("%s.%s" % (mod.__name__, name)))
    if "landlock" in want:
        applied["landlock"] = _layer(cfg, "landlock", _kernel.landlock,
                                     [fd for _, fd in dirs] + libs, files)
    for fd in libs + files + ([fd for _, fd in dirs] if rooted else []):
        os.close(fd)  # nothing of the host's tree stays open
    if "seccomp" in want:
        applied["seccomp"] = _layer(cfg, "seccomp", _kernel.seccomp,
                                    bytes.fromhex(cfg["seccomp"])) is not None
    applied["uid"] = "private" if root else ("mapped" if applied.get("namespaces") else "caller")
    applied["missing"] = cfg.get("missing", {})
    readable = tuple(d for rp, alias in aliases for d in (rp, alias)) if aliases else \
        tuple(entries) + tuple(real)
    readable += ("/dev/null", "/dev/urandom")
    return readable, applied


def _layer(cfg, name, apply, *args):
    """Apply one kernel layer. When it cannot be applied: exit with EXIT_LAYER (the parent
    raises the fail-closed error) unless the user allowed it to be missing; then None."""
    try:
        got = apply(*args)
        return True if got is None else got
    except (_kernel.LayerError, OSError) as e:
        if name in cfg["allow_missing"]:
            cfg.setdefault("missing", {})[name] = str(e)
            return None
        sys.stderr.write("csro sandbox layer missing: %s: %s\n" % (name, e))
        sys.stderr.flush()
        os._exit(EXIT_LAYER)


def _guard_fresh_modules():
    """A second copy of a module already loaded (``importlib.util.module_from_spec`` of the
    spec of ``posix``, say) would carry the functions the stubs replaced, and making one
    raises no audit event: refuse it, recorded, as the stubs do. First imports go on."""
    import _imp
    for name in ("create_builtin", "create_dynamic"):
        create = getattr(_imp, name)

        def guarded(spec, *rest, _create=create, _audit=sys.audit, _loaded=sys.modules,
                    _str=str, _getattr=getattr):
            n = _getattr(spec, "name", None)
            if _str(n) in _loaded:
                _audit("csro.forbidden", "a fresh copy of the loaded module %s" % (n,))
            return _create(spec, *rest)
        setattr(_imp, name, guarded)


def _stub(name, audit=sys.audit):
    def forbidden(*args, **kwargs):
        audit("csro.forbidden", name)
        raise PermissionError("csro sandbox: forbidden: " + name)
    return forbidden


def _lib_dirs():
    """Read-only for the dynamic loader (C extensions such as numpy's load system libraries),
    in the worker's root and the Landlock allow-list beside the Python path; the audit hook
    does not see the loader. The directories its cache (/etc/ld.so.cache) names."""
    arch = getattr(sys.implementation, "_multiarch", "") or os.uname().machine + "-linux-gnu"
    return ("/lib/" + arch, "/usr/lib/" + arch, "/lib64", "/usr/lib64", "/usr/local/lib")


_READ_FILES = ("/dev/null", "/dev/urandom", "/etc/ld.so.cache")

# Refused outright (exact event names, then prefixes).
_DENY = frozenset("""
csro.forbidden os.system os.fork os.forkpty os.kill os.killpg signal.pthread_kill pty.spawn
os.startfile os.remove os.rmdir os.rename os.mkdir os.symlink os.link os.chmod os.chown os.truncate
os.utime os.chdir os.chflags os.lchflags os.setxattr os.removexattr os.chroot
mmap.__new__ resource.setrlimit resource.prlimit sys.addaudithook sys.settrace sys.setprofile
sys._current_frames sys._current_exceptions gc.get_objects gc.get_referrers gc.get_referents
tempfile.mkstemp tempfile.mkdtemp sqlite3.connect dbm.open webbrowser.open
urllib.Request http.client.connect ftplib.connect smtplib.connect poplib.connect
imaplib.open telnetlib.Telnet.open nntplib.connect
""".split())
_DENY_PREFIX = ("os.exec", "os.spawn", "os.posix_spawn", "subprocess.", "ctypes.", "socket.",
                "shutil.", "_winapi.", "winreg.")
_DENY_IMPORT = frozenset("""
_testcapi _testinternalcapi _xxsubinterpreters _xxinterpchannels
_ctypes_test _testmultiphase _testbuffer _testsinglephase _multiprocessing _posixshmem
""".split())
_WRITE_FLAGS = (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_EXCL
                | getattr(os, "O_TMPFILE", 0))


def _make_hook(readable, recorder, where, *, type=type, str=str, bytes=bytes, int=int, len=len,
               PermissionError=PermissionError, BaseException=BaseException,
               getframe=sys._getframe, fstat=os.fstat, write=os.write, exit_=os._exit,
               sigmask=signal.pthread_sigmask, block=signal.SIG_BLOCK, setmask=signal.SIG_SETMASK,
               all_signals=frozenset(signal.valid_signals()),
               gc_off=gc.disable, gc_on=gc.enable, gc_is_on=gc.isenabled,
               bc_code=None, loader_codes=frozenset(), flags_code=types.coroutine.__code__,
               deny=_DENY,
               deny_prefix=_DENY_PREFIX, deny_import=_DENY_IMPORT, write_flags=_WRITE_FLAGS,
               tname=type.__dict__["__name__"].__get__):
    """The audit hook. Everything it uses is bound here (closure/defaults), none of it is a
    global or builtin the policy could patch, and it never calls the policy's objects: each
    argument's exact type is checked before it is used. Code objects may be made or swapped
    only by ``types.coroutine`` (it sets a flag) and unmarshalled only by importlib.

    The recorder: ``recorder`` is (fd, (st_dev, st_ino)) of the worker's end of the recorder
    channel, ``where`` the [batch seq, call index] the worker is running. A refusal is first
    sent to the parent, then raised: what the parent has read, nothing in this
    process can take back. The fd is checked to be that channel still (a policy may close it,
    or ``dup2`` another file over it: neither raises an audit event), with signals blocked and
    the garbage collector off, so that no policy code (a signal handler, a finalizer) runs
    between the check and the write; when the check or the write fails, the worker exits with
    EXIT_RECORDER, which the parent records as FORBIDDEN too. Attributing the refusal to a
    call goes by ``where``, which a policy that reaches the worker's frames can change: it can
    move its forfeit to another call of its own, or make it the worker's (a record of no call
    of the batch), never make it disappear."""
    rec_fd, rec_id = recorder
    exact = frozenset(readable)
    under = tuple(d + "/" for d in readable)
    file_events = frozenset(("open", "os.listdir", "os.scandir"))

    # One function, no helper: the policy reaches the hook's frame (the traceback of its
    # error) and from it every function the hook refers to, with the cells it could rewrite.
    def hook(ev, args):
        why = None
        if ev in file_events:
            path = args[0] if len(args) else None
            if type(path) is int:
                return  # an fd the worker already holds
            if type(path) is str and path == "<policy>":  # compile() looking for the source
                raise FileNotFoundError(2, "no such file", path)
            if ev == "open":
                mode, flags = args[1], args[2]
                if ((type(flags) is int and flags & write_flags) or
                        (type(mode) is str and ("w" in mode or "a" in mode or "x" in mode
                                                or "+" in mode))):
                    why = "writing files is not allowed"
            if why is None:  # a readable path: absolute, no "..", in or under ``readable``
                p = path.decode("utf-8", "surrogateescape") if type(path) is bytes else path
                q = None
                if type(p) is str and p.startswith("/"):
                    parts = []
                    for c in p.split("/"):
                        if c == "..":
                            parts = None
                            break
                        if c and c != ".":
                            parts.append(c)
                    if parts is not None:
                        q = "/" + "/".join(parts)
                if q is None or not (q in exact or q.startswith(under)):
                    why = "reading outside the Python installation"
        elif ev == "import":
            if type(args[0]) is not str or args[0] in deny_import:
                why = "this module is not allowed in the sandbox"
        elif ev == "object.__setattr__":
            if type(args[1]) is not str or (args[1] == "__code__"
                                            and getframe(1).f_code is not flags_code):
                why = "replacing code objects is not allowed"
        elif ev == "code.__new__":
            if getframe(1).f_code is not flags_code:
                why = "making code objects is not allowed"
        elif ev == "marshal.loads" or ev == "marshal.load":
            # only the import system's own loaders, not _compile_bytecode called directly
            if getframe(1).f_code is not bc_code or getframe(2).f_code not in loader_codes:
                why = "loading marshalled code is not allowed"
        elif ev in deny or ev.startswith(deny_prefix):
            why = "not allowed in the sandbox"
        if why is None:
            return
        if ev == "csro.forbidden":  # a stub's (or anyone's sys.audit): name what it says
            ev, args = args[0] if len(args) and type(args[0]) is str else "csro.forbidden", ()
        shown = ", ".join([repr(a[:200]) if type(a) is str else
                           repr(a) if type(a) is int and -(1 << 64) < a < (1 << 64) else
                           "<%s>" % tname(type(a)) for a in args[:2]])
        detail = "%s(%s): %s" % (ev, shown, why)
        # The record, first: nothing below, nor the policy, can take it back.
        seq, call = where[0], where[1]
        msg = ("%d %d " % (seq if type(seq) is int else -1, call if type(call) is int else -1)
               ).encode() + detail.encode("utf-8", "backslashreplace")[:RECORD_BYTES - 48]
        collecting = gc_is_on()
        gc_off()
        try:
            old = sigmask(block, all_signals)
            st = fstat(rec_fd)
            ok = (st.st_dev, st.st_ino) == rec_id and write(rec_fd, msg) == len(msg)
            sigmask(setmask, old)
        except BaseException:
            ok = False
        if not ok:
            exit_(EXIT_RECORDER)
        if collecting:
            gc_on()
        raise PermissionError("csro sandbox: forbidden: " + detail)

    return hook


# ---------------------------------------------------------------- protocol helpers

def _reader(fd, read=os.read, len=len, frm=int.from_bytes):
    buf = bytearray()

    def read_frame():
        while True:
            if len(buf) >= 4:
                n = frm(buf[:4], "big")
                if len(buf) >= 4 + n:
                    body = bytes(buf[4:4 + n])
                    del buf[:4 + n]
                    return body
            chunk = read(fd, 1 << 16)
            if not chunk:
                return None
            buf.extend(chunk)
    return read_frame


def _writer(fd, write=os.write, len=len):
    def send(text):
        data = text.encode("utf-8")
        data = len(data).to_bytes(4, "big") + data
        view = memoryview(data)
        while view:
            try:
                view = view[write(fd, view):]
            except OSError:
                os._exit(EXIT_CHANNEL)
    return send


def _no_default(o):
    raise TypeError("not plain data")


# A C encoder bound once: monkeypatching json or JSONEncoder cannot reach it.
_encode_chunks = json.encoder.c_make_encoder(
    None, _no_default, json.encoder.c_encode_basestring_ascii, None, ":", ",",
    False, False, False)
_scan = json.decoder.JSONDecoder().scan_once


def _encode(obj, join="".join):
    return join(_encode_chunks(obj, 0))


def _check(v, depth, type=type, len=len, str=str, int=int, float=float, bool=bool,
           list=list, tuple=tuple, dict=dict):
    """Size estimate of a plain-data value; raise _NotPlain for anything else."""
    t = type(v)
    if t is str:
        return len(v) + 2
    if t is bool or v is None:
        return 5
    if t is int:
        if v.bit_length() > 13000:
            raise _NotPlain("an int with more than 4000 digits")
        return 24
    if t is float:
        if v - v != 0.0:
            raise _NotPlain("a non-finite float")
        return 24
    if depth >= MAX_DEPTH:
        raise _NotPlain("nested deeper than %d" % MAX_DEPTH)
    if t is list or t is tuple:
        return 2 + sum([_check(x, depth + 1) + 1 for x in v])
    if t is dict:
        size = 2
        for k, x in v.items():
            if type(k) is not str:
                raise _NotPlain("a dict key that is not a str")
            size += len(k) + 4 + _check(x, depth + 1)
        return size
    raise _NotPlain("a %s" % _type_name(v))


def _type_name(v):
    try:
        t = type(v)
        return "%s.%s" % (type.__dict__["__module__"].__get__(t),
                          type.__dict__["__qualname__"].__get__(t))
    except BaseException:
        return "non-plain object"


def _short_tb(e, skip=1):
    """A short traceback of a policy exception, without the worker's own frames."""
    try:
        tb = e.__traceback__
        for _ in range(skip):
            tb = tb.tb_next if tb is not None else None
        text = "".join(traceback.format_exception(type(e), e, tb, limit=-8))
    except BaseException:
        try:
            text = "%s: %s" % (_type_name(e), str(e)[:500])
        except BaseException:
            text = _type_name(e)
    return text if len(text) <= DETAIL_CHARS else "…" + text[-DETAIL_CHARS:]


# ---------------------------------------------------------------- main loop

def main():
    cfg = json.loads(sys.argv[1])
    read_frame, send = _reader(cfg["req"]), _writer(cfg["rep"])
    max_frame = cfg["max_frame"]
    try:
        readable, layers = _setup(cfg)
        streams = _streams.Streams(cfg["seed"])  # after the fork into the pid namespace
        where = [0, 0]  # [batch seq, call index]: what a refusal is recorded against
        st = os.fstat(cfg["rec"])
        recorder = (cfg["rec"], (st.st_dev, st.st_ino))
        ext = sys.modules.get("_frozen_importlib_external")
        bc = getattr(ext, "_compile_bytecode", None)
        loaders = frozenset(getattr(getattr(ext, c, None), "get_code").__code__
                            for c in ("SourceLoader", "SourcelessFileLoader")
                            if hasattr(getattr(ext, c, None), "get_code"))
        if cfg["python_layer"]:
            sys.addaudithook(_make_hook(readable, recorder, where,
                                        bc_code=getattr(bc, "__code__", None),
                                        loader_codes=loaders))
    except BaseException as e:
        sys.stderr.write("csro worker setup failed: %r\n" % (e,))
        sys.stderr.flush()
        os._exit(EXIT_SETUP)
    send(_encode(["ready", layers]))
    out_streams = (sys.stdout, sys.stderr)

    def flush():
        for s in out_streams:
            try:
                s.flush()
            except BaseException:
                pass

    def fatal(seq, reason, detail):
        flush()
        send(_encode([seq, reason, detail[-DETAIL_CHARS:]]))
        os._exit(0)

    frame = read_frame()
    if frame is None:
        os._exit(0)
    seq, source, class_name = _scan(frame.decode("utf-8"), 0)[0]
    objects = {}
    try:
        loaded, entry = _compile(source, class_name, streams)
        where[1] = -1  # a refusal from now to the next batch is of no call
        streams.route_numpy()
    except MemoryError:
        fatal(seq, "memory", "MemoryError while loading the policy")
    except SystemExit as e:
        fatal(seq, "crash", "the policy called sys.exit(%s)" % _exit_code(e))
    flush()
    send(_encode([seq, [None], [] if entry is None else [[0] + entry]]))
    if loaded is None:
        os._exit(0)

    while True:
        frame = read_frame()
        if frame is None:
            os._exit(0)
        try:
            seq, calls = _scan(frame.decode("utf-8"), 0)[0]
            where[0], where[1] = seq, 0
            values, errors = _run_batch(objects, loaded, streams, calls, where, max_frame)
            flush()
            text = _encode([seq, values, errors])
            if len(text) > max_frame:
                text = _shrink(seq, values, errors, max_frame)
        except MemoryError:
            objects.clear()
            fatal(seq, "memory", "MemoryError (memory limit %d MB)" % cfg["memory_mb"])
        except SystemExit as e:
            fatal(seq, "crash", "the policy called sys.exit(%s)" % _exit_code(e))
        except BaseException as e:  # e.g. a policy signal handler firing in worker code
            fatal(seq, "crash", "the worker failed: " + _short_tb(e, 0))
        send(text)


def _run_batch(objects, loaded, streams, calls, where, max_frame,
               type=type, str=str, int=int, bool=bool, len=len, BaseException=BaseException):
    """Run one batch of calls in order: (values, errors) for the reply frame.

    ``[instance, "__init__", [seed]]`` makes an instance (``_instantiate``) with random
    streams seeded with ``seed`` (see ``_streams``);
    every other call runs with its instance's streams active; ``where[1]`` is the index of the
    call running (what the audit hook records a refusal against). MemoryError and SystemExit
    propagate (fatal). The common case (a method of an existing instance returning a short
    string or a small scalar) is handled inline.
    """
    values, errors = [], []
    current = streams.current  # [the active stream]: what the routed generators draw from
    for instance, method, args in calls:
        where[1] = len(values)
        try:
            if method == "__init__":
                stream = current[0] = streams.new(instance, args[0] if args else None)
                objects[instance] = (_instantiate(loaded), stream)
                v = None
            elif method == "__del__":
                objects.pop(instance, None)
                v = None
            else:
                entry = objects.get(instance)
                if entry is None:
                    raise LookupError("no policy instance %r (call __init__ first)" % (instance,))
                current[0] = entry[1]
                v = getattr(entry[0], method)(*args)
        except (MemoryError, SystemExit):
            raise
        except BaseException as e:
            errors.append([len(values)] + _failure(e))
            values.append(None)
            continue
        t = type(v)
        if not ((t is str and len(v) < 4096) or v is None or t is bool or (
                t is int and -(1 << 62) < v < (1 << 62))):
            problem = _not_plain(v, method, max_frame)
            if problem is not None:
                errors.append([len(values), "malformed", problem])
                v = None
        values.append(v)
    where[1] = -1  # a refusal after the calls (a finalizer, a flush) is of no call
    if streams.numpy_pending:  # NumPy imported by this batch: routed from the next one on
        streams.route_numpy()
    return values, errors


def _instantiate(loaded):
    """A policy object (``loaded``: what ``_compile`` checked). Raises what the module or the
    constructor raises.

    Where no state can pass between instances through the module (``_sharing``), every
    instance is made from the class of the module's one run; otherwise from a fresh run of
    the module, so that module and class attributes are the instance's own, as if the worker
    had just loaded the policy for this match. The source is then compiled again (~0.1 ms):
    instances sharing one code object would each bring their own class and globals to its
    specialised bytecode, whose caches then miss on every call (CPython 3.11+)."""
    source, class_name, shared = loaded
    if shared is not None:
        return shared()
    cls = _run_module(compile(source, "<policy>", "exec", dont_inherit=True)).__dict__.get(class_name)
    if not isinstance(cls, type):
        raise TypeError("the policy module defines no class %r this time" % class_name)
    return cls()


def _not_plain(v, method, max_frame):
    """Why a return value cannot be sent (not plain data, too deep or too large), or None."""
    try:
        size = _check(v, 0)
    except _NotPlain as e:
        return ("%s() returned %s, which is not plain data (str, int, float, bool, None, "
                "list, dict with str keys)" % (method, e.args[0]))
    except RecursionError:
        return "%s() returned a value nested too deeply" % method
    if size > max_frame:
        return "%s() returned a value larger than %d bytes" % (method, max_frame)
    return None


_DENIALS = (1, 13, 30)  # EPERM, EACCES, EROFS: what the kernel layers answer


def _denied(e):
    """Whether an exception is the kernel refusing an operation (a Landlock rule, a
    read-only mount of the sandbox), not the policy's own error."""
    return isinstance(e, OSError) and e.errno in _DENIALS


def _failure(e):
    """[reason, detail] of a policy exception: a kernel denial is a forbidden operation."""
    if _denied(e):
        return ["forbidden", "denied by the sandbox's kernel layers: " + _short_tb(e)]
    return ["exception", _short_tb(e)]


class _NotPlain(Exception):
    pass


def _exit_code(e):
    code = e.code
    return repr(code)[:100] if type(code) in (int, str, type(None)) else "…"


def _shrink(seq, values, errors, max_frame):
    """Replace the largest results by MALFORMED until the reply fits in a frame."""
    failed = {e[0]: e for e in errors}
    sizes = sorted(((len(_encode(x)) + len(_encode(failed.get(i))), i)
                    for i, x in enumerate(values)), reverse=True)
    total = sum(s for s, _ in sizes) + 64
    for s, i in sizes:
        if total <= max_frame:
            break
        values[i] = None
        failed[i] = [i, "malformed", "the batch reply is larger than %d bytes" % max_frame]
        total -= s
    return _encode([seq, values, [failed[i] for i in sorted(failed)]])


def _compile(source, class_name, streams):
    """Compile and run the policy module once, as a check: ((source, class name, the class
    every instance may share or None), None), or (None, [reason, detail]). The class is
    shared where ``_sharing`` finds that no state can pass through the module and its run
    drew nothing from the random streams; otherwise instances run fresh copies of it
    (``_instantiate``)."""
    try:
        tree = compile(source, "<policy>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        code = compile(tree, "<policy>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        return None, ["compile_error", "".join(traceback.format_exception_only(type(e), e))]
    linecache.cache["<policy>"] = (len(source), None, source.splitlines(True), "<policy>")
    stream = streams.current[0]
    drawn = stream.drawn()
    try:
        module = _run_module(code)
    except (MemoryError, SystemExit):
        raise
    except BaseException as e:
        if _denied(e):
            return None, _failure(e)
        return None, ["compile_error", "the module raised: " + _short_tb(e)]
    cls = module.__dict__.get(class_name)
    if cls is None:
        return None, ["compile_error", "the source defines no %r" % class_name]
    if not isinstance(cls, type):
        return None, ["compile_error", "%r is not a class" % class_name]
    shared = None
    if streams.current[0] is stream and stream.drawn() == drawn and \
            _sharing.reason_to_copy(tree, module) is None:
        shared = cls
    return (source, class_name, shared), None


def _run_module(code):
    """A new ``policy`` module made by running ``code`` (registered in sys.modules, so that
    pickling, dataclasses and the like find it)."""
    module = types.ModuleType("policy")
    module.__file__ = "<policy>"
    sys.modules["policy"] = module
    exec(code, module.__dict__)
    return module


if __name__ == "__main__":
    main()
