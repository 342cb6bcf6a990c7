"""PolicyWorker: one untrusted code policy in its own sandboxed process.

What is guaranteed, whatever the policy does:
  * the main process never runs policy code, never unpickles or evaluates what a worker sends
    (frames are length-prefixed JSON, capped at ``max_frame_bytes``, checked for shape), and
    never blocks longer than the wall-clock limit (``start_seconds`` / ``call_seconds``:
    poll with a deadline, then SIGKILL) nor buffers more than ``output_bytes`` of its output;
  * a policy's failure becomes a ``Forfeit`` with a ``Reason``: per call (EXCEPTION,
    MALFORMED return value, FORBIDDEN operation) or for the whole worker (TIMEOUT, CRASH,
    MEMORY, CPU_LIMIT, a MALFORMED frame), after which every call answers that Forfeit;
  * before it reads the policy, the worker puts itself under the kernel layers of
    ``_layers.py`` (namespaces, Landlock, seccomp; see docs/sandbox.md for what each holds,
    for root and for an ordinary user): these are the boundary. A layer this machine cannot
    give stops the worker with a SandboxError naming it (fail closed) unless
    ``SandboxLimits.allow_missing`` or ``CSRO_SANDBOX_ALLOW_MISSING`` names it; ``layers``
    lists what it applied (``check_layers()`` probes the machine);
  * the worker also has rlimits on memory, CPU time, file size (0) and processes (0), an
    empty environment, an empty read-only working directory (removed on close), and, as the
    recorder of *why* a policy forfeits, stubs and an audit hook (``_worker.py``);
  * a policy stopped by a layer forfeits FORBIDDEN: killed by the seccomp filter (SIGSYS),
    an operation the kernel refused and the policy let through, or an audit-hook refusal;
  * the recorder is out of the policy's reach: the audit hook sends each refusal to this
    process on a channel of its own (a SOCK_SEQPACKET socket the worker can only write to)
    before the policy sees the error, and the call it names forfeits FORBIDDEN whatever the
    policy does next (catches the error, rewrites the worker's memory, crashes). Anything
    else on that channel (a record of no call of the batch, one of a batch already answered,
    bytes that are not a record, a flood), the channel closed while the worker lives, or a
    hook that could not write its record (EXIT_RECORDER) makes the whole worker FORBIDDEN;
  * no zombies, temp dirs or fds are left behind: ``close()`` (also on ``with`` exit, GC
    and interpreter exit) kills and reaps the process (the keeper, whose death takes the
    policy's process with it).

``layers=()`` and ``python_layer=False`` switch the kernel layers or the Python layer off:
for tests of what each holds alone (tests/policies/escapes.py), never for untrusted code.
A worker started from the main thread is killed with its parent (PR_SET_PDEATHSIG); one
started from another thread exits when the parent's end of its request pipe closes, or at
its CPU limit.
"""

from __future__ import annotations

import collections
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence

from csro.errors import ConfigError, SandboxError
from csro.policies import _layers
from csro.policies._types import Call, Forfeit, Reason, Result, SandboxLimits

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")
_EXIT_SETUP, _EXIT_CHANNEL, _EXIT_LAYER, _EXIT_RECORDER = 70, 71, 72, 73
_RECORDS_KEPT = 1024  # refusals waiting for their batch's reply, at most
_CALL_REASONS = {"exception": Reason.EXCEPTION, "malformed": Reason.MALFORMED,
                 "forbidden": Reason.FORBIDDEN}
_START_REASONS = {"compile_error": Reason.COMPILE_ERROR, "forbidden": Reason.FORBIDDEN}
_FATAL_REASONS = {"memory": Reason.MEMORY, "crash": Reason.CRASH}
_ENV = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1", "LC_ALL": "C.UTF-8"}
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_c_make_encoder = json.encoder.c_make_encoder
_encode_str = json.encoder.encode_basestring_ascii
_MEMO_SIZE = 256  # encoded call arguments kept per worker


def _not_json(o: object) -> None:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _encode_calls(seq: int, calls: Sequence[Call], memo: dict[int, tuple]) -> bytes:
    """The request frame body ``[seq, [[instance, method, args], ...]]`` as JSON bytes.

    Byte-for-byte what ``_encode`` gives for the whole list, but cheaper: runners pass the
    same observation objects to many calls (e.g. every RRPS match after the same joint
    action, in every round), so the encoding of each (method, ``args`` object) is kept in
    ``memo`` (by ``id``, holding the object so that its id cannot be reused; at most
    ``_MEMO_SIZE`` entries). Request args are never changed once issued (``Request``).
    """
    parts = []
    append = parts.append
    chunks = None
    for instance, method, args in calls:
        hit = memo.get(id(args))
        if hit is None or hit[0] is not args or hit[1] != method:
            if chunks is None:  # one C encoder per batch (JSONEncoder.encode makes one per call)
                chunks = _c_make_encoder({}, _not_json, _encode_str, None, ":", ",",
                                         False, False, False)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            hit = memo[id(args)] = (args, method,
                                    f",{_encode_str(method)},{''.join(chunks(args, 0))}]")
        append(f"[{instance:d}{hit[2]}")
    return f"[{seq},[{','.join(parts)}]]".encode()


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


_decode = json.JSONDecoder(parse_constant=_reject_constant).decode


def check_layers() -> dict:
    """The kernel layers this machine gives a policy worker, found by starting one (every
    layer allowed to be missing, so that it starts) and reading what it applied: a dict with
    ``namespaces`` (the names), ``hidden`` (paths), ``landlock`` (ABI and parts), ``seccomp``,
    ``uid`` and ``missing`` (layer -> why)."""
    with PolicyWorker("class P:\n    pass\n", "P",
                      SandboxLimits(memory_mb=256, allow_missing=_layers.LAYERS)) as w:
        failed = w.start()
        if failed is not None:
            raise SandboxError(f"a probe worker could not start: {failed.describe()}")
        return dict(w.layers)


class _Dead(Exception):
    def __init__(self, forfeit: Forfeit):
        self.forfeit = forfeit


class _Process:
    """What must be released: the process, our pipe ends, the working directory.
    Kept apart from PolicyWorker so that a weakref finalizer can release it."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.fds: list[int] = []
        self.workdir: str | None = None
        self.status: tuple[int, float, int] | None = None  # (wait status, CPU s, max RSS KiB)
        self.owner = os.getpid()  # a forked child must not kill or reap its parent's workers

    def reap(self, block: bool) -> bool:
        """Collect the exit status; True once the process is gone."""
        if self.status is not None or self.proc is None or os.getpid() != self.owner:
            return True
        try:
            pid, status, usage = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            pid, status, usage = self.proc.pid, 0, None
        if pid == 0:
            return False
        cpu = usage.ru_utime + usage.ru_stime if usage is not None else 0.0
        self.status = (status, cpu, usage.ru_maxrss if usage is not None else 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status) if usage else -1
        return True

    def kill(self) -> None:
        if self.proc is not None and self.status is None and os.getpid() == self.owner:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.reap(block=True)

    def release(self) -> None:
        """Close our pipe ends (an idle worker exits on the EOF, and its keeper after it, so
        that its CPU time is counted in ours), give it a moment, then kill what is left."""
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
        for i in range(8):  # ~0.1 s at most, for a worker still busy in a call
            if self.reap(block=False):
                break
            time.sleep(0.001 * 1.6 ** i)
        self.kill()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


class PolicyWorker:
    """A policy class compiled from ``source`` and run in a sandboxed worker process.

    ``call`` sends a batch of ``Call``s in one round trip and returns one ``Result`` per call,
    in order: the method's plain-data return value, or a ``Forfeit``. ``submit`` and
    ``collect`` split a round trip so that a caller can send the next batch while the
    worker still computes the previous one (the worker runs batches in the order sent, each
    against the ``call_seconds`` limit from when it could start on it, i.e. from the later
    of its sending and the collection of the batch before). Each instance
    (``Call(i, "__init__", (seed,))``) has random streams of its own seeded with ``seed``
    (``_streams``: ``random``, unseeded ``random.Random()``, NumPy's global generator) and a
    fresh copy of the policy module unless no state can pass through it (``_sharing``), so that what an instance does depends on
    its seed alone, not on the other instances of the worker; ``seed`` here seeds what runs
    outside any instance (the module's first, checking run) and the streams of instances made
    without a seed. String hashing is always seeded with 0.

    One PolicyWorker is used by one thread at a time; different workers are independent.
    Call arguments must be JSON data (a TypeError/ValueError for anything else is the
    caller's bug, raised before anything is sent).
    """

    def __init__(self, source: str, class_name: str, limits: SandboxLimits = SandboxLimits(),
                 *, layers: Sequence[str] = _layers.LAYERS, seed: int = 0,
                 python_layer: bool = True):
        unknown = set(layers) - set(_layers.LAYERS)
        if unknown:
            raise ConfigError(f"unknown sandbox layer(s) {sorted(unknown)}; the layers are "
                              f"{_layers.LAYERS}")
        self.source, self.class_name, self.limits = source, class_name, limits
        self.want = tuple(n for n in _layers.LAYERS if n in layers)
        self.python_layer = python_layer
        self.allow_missing = _layers.allow_missing(limits.allow_missing)
        self.layers: dict = {}  # what the worker applied, from its ready frame
        self.seed = int(seed)
        self.dead_reason: Forfeit | None = None
        self._started = self._closed = self._ready = False
        self._want_write = self._out_open = False
        self._seq = 0
        self._memo: dict[int, tuple] = {}  # id(args) -> (args, method, encoding)
        self._inflight: collections.deque[tuple[int, int, float]] = collections.deque()
        self._idle_since = 0.0  # when the worker last finished a batch (or its start)
        self.last_seconds = 0.0  # the wall time the worker spent on the last collected batch
        self._rbuf = bytearray()
        self._pending = memoryview(b"")
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0
        self._records: dict[int, list[tuple[int, str]]] = {}  # seq -> the refusals recorded
        self._n_records = 0
        self._answered = -1  # the last batch whose results were returned
        self._rec_open = False
        self._p = _Process()
        self._finalizer = weakref.finalize(self, _Process.release, self._p)

    # ------------------------------------------------------------------ lifecycle

    @property
    def alive(self) -> bool:
        return self._started and self.dead_reason is None and not self._closed

    @property
    def workdir(self) -> str | None:
        """The worker's (empty, read-only) working directory; removed by ``close``."""
        return self._p.workdir

    def start(self) -> Forfeit | None:
        """Spawn the worker and compile the policy: None, or why it cannot play."""
        if self._closed:
            raise SandboxError("this PolicyWorker is closed")
        if self._started:
            return self.dead_reason
        self._started = True
        deadline = time.monotonic() + self.limits.start_seconds
        self._spawn()
        source = _encode([0, self.source, self.class_name]).encode()
        try:
            self.layers = self._ready_frame(
                self._exchange(len(source).to_bytes(4, "big") + source, deadline))
            self._ready = True
            results = self._parse(self._exchange(b"", deadline), 0, 1, _START_REASONS)
            self._apply_records(0, results, exits=results[0] is not None)
        except _Dead as dead:
            return self._die(self._recorded(dead.forfeit))
        if results[0] is not None:
            return self._die(results[0] if isinstance(results[0], Forfeit) else
                             Forfeit(Reason.MALFORMED, "unexpected compile reply"))
        self._idle_since = time.monotonic()
        return None

    def close(self) -> None:
        """Kill the worker and release everything; idempotent."""
        self._closed = True
        self._finalizer()

    def __enter__(self) -> PolicyWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("alive" if self.alive else
                                                f"dead: {self.dead_reason}")
        return f"<PolicyWorker {self.class_name} {'+'.join(self.want) or 'hook'} {state}>"

    # ------------------------------------------------------------------ calls

    def call(self, calls: Sequence[Call]) -> list[Result]:
        """Run a batch of calls in one round trip; one result (or Forfeit) per call."""
        self.submit(calls)
        return self.collect()

    def submit(self, calls: Sequence[Call]) -> None:
        """Send a batch of calls without waiting; ``collect`` returns the replies in order."""
        if not self._started:
            self.start()
        if self._closed:
            raise SandboxError("this PolicyWorker is closed")
        n = len(calls)
        if self.dead_reason is not None or n == 0:
            self._inflight.append((0, n, 0.0))
            return
        self._seq += 1
        body = _encode_calls(self._seq, calls, self._memo)
        self._inflight.append((self._seq, n, time.monotonic()))
        self._send(len(body).to_bytes(4, "big") + body)

    def collect(self) -> list[Result]:
        """The results of the oldest submitted batch not yet collected (waits for them)."""
        if self._closed:
            raise SandboxError("this PolicyWorker is closed")
        seq, n, sent = self._inflight.popleft()
        self.last_seconds = 0.0
        if self.dead_reason is not None:
            return [self.dead_reason] * n
        if n == 0:
            return []
        began = max(sent, self._idle_since)  # the worker cannot start before its last reply
        try:
            frame = self._exchange(b"", began + self.limits.call_seconds)
            results = self._parse(frame, seq, n, _CALL_REASONS)
            self._apply_records(seq, results)
        except _Dead as dead:
            results = [self._die(self._recorded(dead.forfeit))] * n
        self._idle_since = now = time.monotonic()
        self.last_seconds = now - began
        return results

    def output(self) -> str:
        """The policy's captured stdout/stderr: its first and last ``output_bytes/2`` bytes."""
        self._drain_output()
        text = bytes(self._head)
        if self._dropped:
            text += b"\n[... %d bytes dropped ...]\n" % self._dropped
        return (text + bytes(self._tail)).decode("utf-8", "replace")

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _ready_frame(frame: bytes) -> dict:
        """The worker's first frame: ``["ready", layers applied]``."""
        try:
            ready = _decode(frame.decode("utf-8"))
        except (ValueError, RecursionError):
            ready = None
        if type(ready) is not list or len(ready) != 2 or ready[0] != "ready" or \
                type(ready[1]) is not dict:
            raise _Dead(Forfeit(Reason.MALFORMED, "the worker's first frame is wrong"))
        return ready[1]

    def _spawn(self) -> None:
        p = self._p
        p.workdir = tempfile.mkdtemp(prefix="csro-policy-")
        os.chmod(p.workdir, 0o555)
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        rec_r, rec_w = (s.detach() for s in socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))
        p.fds = [req_w, rep_r, out_r, rec_r]
        layers = self.want
        cfg = {"req": req_r, "rep": rep_w, "rec": rec_w, "memory_mb": int(self.limits.memory_mb),
               "cpu_seconds": max(1, int(self.limits.cpu_seconds)),
               "max_frame": int(self.limits.max_frame_bytes), "seed": self.seed,
               "ppid": os.getpid(), "layers": layers, "python_layer": self.python_layer, "allow_missing": sorted(self.allow_missing),
               "seccomp": _seccomp_hex(self.allow_missing) if "seccomp" in layers else "",
               "pdeathsig": threading.current_thread() is threading.main_thread()}
        cmd = [sys.executable, "-P", "-s", WORKER, json.dumps(cfg)]
        try:
            p.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w,
                                      pass_fds=(req_r, rep_w, rec_w), cwd=p.workdir, env=dict(_ENV),
                                      start_new_session=True)
        except OSError as e:
            p.release()
            raise SandboxError(f"cannot start a policy worker: {e}") from e
        finally:
            for fd in (req_r, rep_w, out_w, rec_w):
                os.close(fd)
        for fd in p.fds:
            os.set_blocking(fd, False)
        self._poll = select.poll()
        for fd in (rep_r, out_r, rec_r):
            self._poll.register(fd, select.POLLIN)
        self._out_open = self._rec_open = True

    def _die(self, forfeit: Forfeit) -> Forfeit:
        """Record why the worker is out, kill it and release its fds and directory."""
        if self.dead_reason is None:
            self.dead_reason = forfeit
        self._p.kill()
        self._drain_output()
        self._out_open = self._rec_open = False
        self._p.release()
        return self.dead_reason

    def _send(self, data: bytes) -> None:
        """Queue ``data`` after anything still pending and write what the pipe takes now."""
        self._pending = memoryview(bytes(self._pending) + data) if self._pending else \
            memoryview(data)
        self._write_some()

    def _exchange(self, data: bytes, deadline: float) -> bytes:
        """Write ``data`` (plus anything still pending), then read one reply frame."""
        req_w, rep_r, out_r, rec_r = self._p.fds
        if data:
            self._send(data)
        else:
            self._write_some()
        peek = not self._pending  # a pipelined reply may be waiting already: read, no poll
        while True:
            frame = self._take_frame()
            if frame is not None:
                return frame
            if peek:
                peek = False
                self._read_reply(rep_r)
                continue
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise _Dead(self._exit_reason() or Forfeit(
                    Reason.TIMEOUT, "no reply within %.3g s" % self.limits.call_seconds
                    if self._seq else "not started within %.3g s" % self.limits.start_seconds))
            for fd, ev in self._poll.poll(max(1, int(wait * 1000 + 0.999))):
                if fd == rep_r:
                    self._read_reply(rep_r)
                elif fd == out_r:
                    self._drain_output(once=True)
                elif fd == rec_r:
                    self._read_records()
                elif fd == req_w:
                    self._write_some()

    def _write_some(self) -> None:
        req_w = self._p.fds[0]
        try:
            while self._pending:
                self._pending = self._pending[os.write(req_w, self._pending):]
        except BlockingIOError:
            pass
        except OSError:  # the worker closed its end: it is dying, its reply pipe will tell
            self._pending = memoryview(b"")
        if bool(self._pending) != self._want_write:
            self._want_write = bool(self._pending)
            if self._want_write:
                self._poll.register(req_w, select.POLLOUT)
            else:
                self._poll.unregister(req_w)

    def _read_reply(self, fd: int) -> None:
        want = 1 << 16
        if len(self._rbuf) >= 4:
            want = max(want, 4 + int.from_bytes(self._rbuf[:4], "big") - len(self._rbuf))
        try:
            chunk = os.read(fd, min(want, self.limits.max_frame_bytes + 4))
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            raise _Dead(self._exit_reason(eof=True))
        self._rbuf += chunk

    def _take_frame(self) -> bytes | None:
        buf = self._rbuf
        if len(buf) < 4:
            return None
        n = int.from_bytes(buf[:4], "big")
        if n > self.limits.max_frame_bytes:
            raise _Dead(Forfeit(Reason.MALFORMED, f"a reply frame of {n} bytes (the limit is "
                                                  f"{self.limits.max_frame_bytes})"))
        if len(buf) < 4 + n:
            return None
        frame = bytes(buf[4:4 + n])
        del buf[:4 + n]
        return frame

    def _exit_reason(self, eof: bool = False, channel: str = "reply") -> Forfeit | None:
        """Why the worker stopped: None if it is still running (and no EOF was seen); after
        an EOF on ``channel`` of a worker still running, MALFORMED (its reply channel) or
        FORBIDDEN (its recorder channel)."""
        p = self._p
        waits = [0.001 * 1.5 ** i for i in range(14)] if eof else [0.0]  # ~0.5 s in all
        for wait in waits:  # an EOF comes with the exit, give a loaded machine a moment
            if p.reap(block=False):
                break
            time.sleep(wait)
        else:
            if not eof:
                return None
            return Forfeit(Reason.FORBIDDEN if channel == "recorder" else Reason.MALFORMED,
                           f"the worker closed its {channel} channel")
        self._drain_output()
        status, cpu, rss_kib = p.status
        tail = self.output()[-300:]
        tail = f"; output: …{tail}" if tail.strip() else ""
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and
                                         cpu >= self.limits.cpu_seconds - 0.05):
                return Forfeit(Reason.CPU_LIMIT, f"CPU time limit of "
                                                 f"{self.limits.cpu_seconds} s exceeded")
            if sig == signal.SIGSYS:
                return Forfeit(Reason.FORBIDDEN, "the seccomp layer stopped a forbidden system "
                                                 "call (the worker was killed by SIGSYS; see "
                                                 "docs/sandbox.md for the calls it refuses)")
            if sig == signal.SIGKILL and rss_kib * 1024 >= 0.9 * self.limits.memory_mb * 2**20:
                return Forfeit(Reason.MEMORY, f"killed while using {rss_kib // 1024} MB "
                                              f"(memory limit {self.limits.memory_mb} MB)")
            return Forfeit(Reason.CRASH, f"killed by {signal.Signals(sig).name}{tail}")
        code = os.WEXITSTATUS(status)
        if self._ready and code == _EXIT_RECORDER:
            return Forfeit(Reason.FORBIDDEN, "the audit hook could not record a refusal: the "
                                             "worker's recorder channel was closed, replaced or full")
        if not self._ready and code == _EXIT_LAYER:  # fail closed: name the layer
            self._p.release()
            line = next((ln for ln in self.output().splitlines()
                         if ln.startswith("csro sandbox layer missing: ")), "")
            layer, _, detail = line[len("csro sandbox layer missing: "):].partition(": ")
            raise SandboxError(_layers.missing_message(layer or "?", detail or "no detail"))
        if not self._ready:  # no policy code has run yet: the machine's fault, not the policy's
            self._p.release()
            raise SandboxError("the policy worker could not set up its sandbox (exit status "
                               f"{code}): {self.output()[-500:].strip()}")
        return Forfeit(Reason.CRASH, f"the worker exited with status {code}{tail}")

    def _read_records(self) -> None:
        """Take the refusals the recorder channel holds now (``_worker._make_hook``): kept by
        batch until its reply is collected. Raise _Dead (FORBIDDEN) for what no worker sends:
        bytes that are not a record, a record of a batch already answered or never sent, more
        than ``_RECORDS_KEPT`` waiting."""
        while self._rec_open:
            fd = self._p.fds[3]
            try:
                msg = os.read(fd, 4096)
            except BlockingIOError:
                return
            except OSError:
                msg = b""
            if not msg:  # every copy of the worker's end is closed
                self._rec_open = False
                self._poll.unregister(fd)
                return
            head = msg.split(b" ", 2)
            try:
                seq, index, detail = int(head[0]), int(head[1]), _clean(head[2].decode("utf-8", "replace"))
            except (ValueError, IndexError):
                raise _Dead(Forfeit(Reason.FORBIDDEN, f"bytes on the recorder channel that are not "
                                                      f"a record: {msg[:100]!r}")) from None
            if not self._answered < seq <= self._seq:
                raise _Dead(Forfeit(Reason.FORBIDDEN, f"a refusal outside the batches in progress: {detail}"))
            if self._n_records >= _RECORDS_KEPT:
                raise _Dead(Forfeit(Reason.FORBIDDEN, f"more than {_RECORDS_KEPT} refusals in one "
                                                      f"round trip; the first: {self._first_record()}"))
            self._records.setdefault(seq, []).append((index, detail))
            self._n_records += 1

    def _first_record(self) -> str | None:
        return next((d for seq in sorted(self._records) for _, d in self._records[seq]), None)

    def _apply_records(self, seq: int, results: list[Result], exits: bool = False) -> None:
        """Batch ``seq`` answered: every call with a recorded refusal forfeits FORBIDDEN (its
        first record's detail), whatever the reply said. The worker sent them before its
        reply, so they are all here once the channel is read. The channel must still be
        open unless the worker ``exits`` after this reply (a policy that did not compile) or
        is exiting (a crash the next round trip reports)."""
        self._read_records()
        if not self._rec_open and not exits:
            raise _Dead(self._exit_reason(eof=True, channel="recorder"))
        self._answered = seq
        done = set()
        for index, detail in self._records.pop(seq, ()):
            self._n_records -= 1
            if not 0 <= index < len(results):
                raise _Dead(Forfeit(Reason.FORBIDDEN, f"a refusal outside the calls of the batch: {detail}"))
            if index not in done:
                done.add(index)
                results[index] = Forfeit(Reason.FORBIDDEN, detail)

    def _recorded(self, forfeit: Forfeit) -> Forfeit:
        """Why a worker that is out forfeits: FORBIDDEN when it recorded a refusal not yet
        answered for (and then crashed, timed out, ...), or closed its recorder channel and
        timed out; otherwise ``forfeit``."""
        if forfeit.reason is Reason.FORBIDDEN or not self._started:
            return forfeit
        try:
            self._read_records()
        except _Dead as dead:
            return dead.forfeit
        first = self._first_record()
        if first is not None:
            return Forfeit(Reason.FORBIDDEN, first)
        if not self._rec_open and forfeit.reason is Reason.TIMEOUT:
            return Forfeit(Reason.FORBIDDEN, "the worker closed its recorder channel")
        return forfeit

    def _drain_output(self, once: bool = False) -> None:
        if not self._out_open:
            return
        out_r = self._p.fds[2]
        while True:
            try:
                chunk = os.read(out_r, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._out_open = False
                self._poll.unregister(out_r)
                return
            self._keep(chunk)
            if once:
                return

    def _keep(self, chunk: bytes) -> None:
        half = max(1, self.limits.output_bytes // 2)
        room = half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk[-half:]
            extra = len(self._tail) - half
            if extra > 0:
                self._dropped += extra
                del self._tail[:extra]

    def _parse(self, frame: bytes, seq: int, n: int, reasons: dict) -> list[Result]:
        """Check a reply frame against the request; raise _Dead if it is not a valid one.

        A reply is ``[seq, values, errors]``: one plain-data value per call, and a list of
        ``[index, reason, detail]`` for the calls that failed (their values are ignored).
        """
        if self._rbuf and not self._inflight:
            raise _Dead(Forfeit(Reason.MALFORMED, "the worker sent more than one reply"))
        try:
            reply = _decode(frame.decode("utf-8"))
        except (ValueError, RecursionError) as e:
            raise _Dead(Forfeit(Reason.MALFORMED, f"a reply that is not JSON: {e}"[:300]))
        if (type(reply) is not list or len(reply) != 3 or type(reply[0]) is not int
                or reply[0] != seq):
            raise _Dead(Forfeit(Reason.MALFORMED, "a reply to a different request"))
        _, values, errors = reply
        if type(values) is str and values in _FATAL_REASONS and type(errors) is str:
            raise _Dead(Forfeit(_FATAL_REASONS[values], _clean(errors)))
        if type(values) is not list or len(values) != n or type(errors) is not list:
            raise _Dead(Forfeit(Reason.MALFORMED, f"a reply without {n} results"))
        if b"\\ud" in frame or b"\\uD" in frame:  # escaped surrogates: check the strings
            for i, v in enumerate(values):
                if not _utf8_clean(v):
                    values[i] = Forfeit(Reason.MALFORMED, "a string that is not valid UTF-8")
        for e in errors:
            if (type(e) is list and len(e) == 3 and type(e[0]) is int and 0 <= e[0] < n
                    and type(e[1]) is str and e[1] in reasons and type(e[2]) is str):
                values[e[0]] = Forfeit(reasons[e[1]], _clean(e[2]))
            else:
                raise _Dead(Forfeit(Reason.MALFORMED, "a malformed result entry"))
        return values


def _seccomp_hex(allow_missing: frozenset[str]) -> str:
    """The seccomp program for the worker, or "" where it cannot be built and the user
    allowed the seccomp layer to be missing (the worker then reports it missing)."""
    try:
        return _layers.seccomp_program().hex()
    except SandboxError as e:
        if "seccomp" in allow_missing:
            return ""
        raise SandboxError(_layers.missing_message("seccomp", str(e))) from None


def _clean(text: str) -> str:
    return text[:2000].encode("utf-8", "replace").decode("utf-8")


def _utf8_clean(value: object) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is str:
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif type(v) is list:
            stack.extend(v)
        elif type(v) is dict:
            stack.extend(v.keys())
            stack.extend(v.values())
    return True
