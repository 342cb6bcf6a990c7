"""PolicyWorker: protocol, lifecycle and the sandbox's fixed properties."""

from __future__ import annotations

import dataclasses
import gc
import os
import tempfile
import textwrap
import time

import pytest

from csro.errors import ConfigError, SandboxError
from csro.policies import (Call, Forfeit, PolicyWorker, Reason, SandboxLimits,
                           check_layers)

LIMITS = SandboxLimits(memory_mb=512, cpu_seconds=20, call_seconds=2, start_seconds=10)

COUNTER = textwrap.dedent('''
    import random

    class Counter:
        def __init__(self):
            self.n = 0

        def act(self, obs):
            self.n += 1
            return obs["legal"][self.n % len(obs["legal"])]

        def count(self):
            return self.n

        def echo(self, *args):
            return list(args)

        def fail(self):
            raise ValueError("bad move")

        def shout(self, text):
            print(text)
            return None
''')


@pytest.fixture
def worker():
    w = PolicyWorker(COUNTER, "Counter", LIMITS)
    assert w.start() is None
    yield w
    w.close()


def one(source: str, body: str = "", limits: SandboxLimits = LIMITS, **kw) -> PolicyWorker:
    w = PolicyWorker(source, "P", limits, **kw)
    return w


def returns(expr: str, **kw):
    """What ``act`` returning ``expr`` gives back."""
    src = f"import os, sys\nclass P:\n    def act(self):\n        return {expr}\n"
    with PolicyWorker(src, "P", LIMITS, **kw) as w:
        assert w.start() is None
        return w.call([Call(0, "__init__"), Call(0, "act")])[1]


# ---------------------------------------------------------------- protocol

def test_batch_results_in_order_and_state_per_instance(worker):
    obs = {"legal": ["rock", "paper", "scissors"]}
    init = worker.call([Call(i, "__init__") for i in range(3)])
    assert init == [None, None, None]
    r = worker.call([Call(0, "act", (obs,)), Call(1, "count"), Call(0, "act", (obs,)),
                     Call(2, "echo", (1, "two", [3.5, None], {"k": True})), Call(0, "count")])
    assert r == ["paper", 0, "scissors", [1, "two", [3.5, None], {"k": True}], 2]
    assert worker.call([Call(0, "count"), Call(1, "count")]) == [2, 0]


def test_del_drops_the_instance(worker):
    worker.call([Call(7, "__init__"), Call(7, "act", ({"legal": ["a"]},))])
    r = worker.call([Call(7, "__del__"), Call(7, "count")])
    assert r[0] is None
    assert isinstance(r[1], Forfeit) and r[1].reason is Reason.EXCEPTION
    assert "no policy instance 7" in r[1].detail
    assert worker.call([Call(7, "__init__"), Call(7, "count")]) == [None, 0]  # fresh object


def test_exception_fails_only_that_call(worker):
    r = worker.call([Call(1, "__init__"), Call(1, "fail"), Call(1, "count"), Call(1, "nope")])
    assert r[0] is None and r[2] == 0
    assert r[1].reason is Reason.EXCEPTION
    assert "ValueError: bad move" in r[1].detail and "<policy>" in r[1].detail
    assert "_worker.py" not in r[1].detail  # the worker's own frames are not shown
    assert r[3].reason is Reason.EXCEPTION and "AttributeError" in r[3].detail
    assert worker.alive


def test_empty_batch(worker):
    assert worker.call([]) == []


def test_call_starts_the_worker():
    with PolicyWorker(COUNTER, "Counter", LIMITS) as w:
        assert w.call([Call(1, "__init__"), Call(1, "count")]) == [None, 0]
        assert w.alive


@pytest.mark.parametrize("expr,ok", [
    ("'rock'", "rock"), ("3", 3), ("2.5", 2.5), ("None", None), ("True", True),
    ("(1, 2)", [1, 2]), ("{'a': [1, {'b': None}]}", {"a": [1, {"b": None}]}),
    ("'é' * 3 + '😀'", "ééé😀"), ("10 ** 30", 10 ** 30),
])
def test_plain_return_values(expr, ok):
    assert returns(expr) == ok


@pytest.mark.parametrize("expr,why", [
    ("object()", "builtins.object"), ("lambda: 1", "function"), ("float('nan')", "non-finite"),
    ("float('inf')", "non-finite"), ("{1: 'a'}", "dict key"), ("{'a'}", "builtins.set"),
    ("b'bytes'", "builtins.bytes"), ("10 ** 5000", "4000 digits"),
    ("(lambda l: (l.append(l), l)[1])([])", "nested"),
    ("type('S', (str,), {})('x')", "S"),
])
def test_non_plain_return_values_are_malformed(expr, why):
    r = returns(expr)
    assert isinstance(r, Forfeit) and r.reason is Reason.MALFORMED, r
    assert why in r.detail


def test_numpy_is_importable_and_its_scalars_are_not_plain():
    assert returns("__import__('numpy').arange(5).sum().item()") == 10
    r = returns("__import__('numpy').int64(3)")
    assert r.reason is Reason.MALFORMED and "numpy.int64" in r.detail


def test_stdlib_modules_import_lazily():
    assert returns("__import__('statistics').median([3, 1, 2])") == 2
    assert returns("str(__import__('fractions').Fraction(1, 3))") == "1/3"


# ---------------------------------------------------------------- start / compile

@pytest.mark.parametrize("source,name,reason,why", [
    ("class P(:\n  pass", "P", Reason.COMPILE_ERROR, "SyntaxError"),
    ("class Q:\n  pass", "P", Reason.COMPILE_ERROR, "defines no 'P'"),
    ("P = 3", "P", Reason.COMPILE_ERROR, "not a class"),
    ("raise RuntimeError('top')\nclass P: pass", "P", Reason.COMPILE_ERROR, "RuntimeError: top"),
    ("import no_such_module_xyz\nclass P: pass", "P", Reason.COMPILE_ERROR, "no_such_module"),
    ("x = '\\0'\nclass P: pass\nexec('\\0')", "P", Reason.COMPILE_ERROR, "null"),
])
def test_compile_errors(source, name, reason, why):
    with PolicyWorker(source, name, LIMITS) as w:
        f = w.start()
        assert isinstance(f, Forfeit) and f.reason is reason, f
        assert why in f.detail
        assert not w.alive and w.dead_reason == f
        assert w.call([Call(1, "__init__"), Call(1, "act")]) == [f, f]
        assert w.start() == f


def test_class_raising_in_init_is_an_exception_of_that_call():
    src = "class P:\n    def __init__(self):\n        raise KeyError('nope')\n    def act(self): return 1\n"
    with PolicyWorker(src, "P", LIMITS) as w:
        assert w.start() is None
        r = w.call([Call(1, "__init__"), Call(1, "act")])
        assert r[0].reason is Reason.EXCEPTION and "KeyError" in r[0].detail
        assert r[1].reason is Reason.EXCEPTION and "no policy instance" in r[1].detail
        assert w.alive


def test_start_timeout():
    src = "while True:\n    pass\nclass P: pass\n"
    lim = SandboxLimits(memory_mb=512, start_seconds=0.5)
    with PolicyWorker(src, "P", lim) as w:
        f = w.start()
        assert f.reason is Reason.TIMEOUT and not w.alive


# ---------------------------------------------------------------- dead and closed workers

def test_dead_worker_answers_its_forfeit_at_once():
    src = "import time\nclass P:\n    def act(self):\n        time.sleep(60)\n    def ok(self): return 1\n"
    lim = SandboxLimits(memory_mb=512, call_seconds=0.3)
    with PolicyWorker(src, "P", lim) as w:
        r = w.call([Call(1, "__init__"), Call(1, "ok"), Call(1, "act"), Call(1, "ok")])
        assert all(x.reason is Reason.TIMEOUT for x in r) and len(set(r)) == 1
        assert not w.alive and w.dead_reason == r[0]
        assert w.call([Call(1, "ok")] * 5) == [r[0]] * 5


def test_close_is_idempotent_and_calls_after_close_raise(worker):
    pid = worker._p.proc.pid
    worker.close()
    worker.close()
    assert not worker.alive
    assert not os.path.exists(f"/proc/{pid}")  # killed and reaped: no zombie
    with pytest.raises(SandboxError):
        worker.call([Call(1, "count")])
    with pytest.raises(SandboxError):
        worker.start()


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_no_leaks_of_processes_dirs_or_fds(monkeypatch):
    dirs: list[str] = []
    mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: dirs.append(mkdtemp(**kw)) or dirs[-1])
    gc.collect()
    fds = _fds()
    pids = []
    for i in range(4):
        w = PolicyWorker(COUNTER if i != 1 else "class (", "Counter",
                         SandboxLimits(memory_mb=512, call_seconds=0.3))
        w.start()
        pids.append(w._p.proc.pid)
        if i == 2:
            w.call([Call(1, "__init__"), Call(1, "fail")])
            with w:
                pass
        elif i == 3:
            del w  # garbage collection closes it
            gc.collect()
        else:
            w.close()
    gc.collect()
    assert _fds() == fds
    assert len(dirs) == 4 and not any(os.path.exists(d) for d in dirs)
    assert not any(os.path.exists(f"/proc/{p}") for p in pids)


def test_output_is_captured_and_bounded():
    lim = SandboxLimits(memory_mb=512, output_bytes=1000)
    with PolicyWorker(COUNTER, "Counter", lim) as w:
        w.call([Call(1, "__init__"), Call(1, "shout", ("hello from the policy",))])
        assert "hello from the policy" in w.output()
        w.call([Call(1, "shout", ("x" * 100_000,))] * 20)
        out = w.output()
        assert len(out.encode()) <= 1100 and "bytes dropped" in out
        assert out.startswith("hello from the policy")


# ---------------------------------------------------------------- the sandbox's properties

def test_every_kernel_layer_is_applied_here():
    """This machine (and CI's) gives every layer, for root and for an ordinary user alike
    (tests/policies/test_escapes.py runs the corpus as both); a worker reports what it got."""
    layers = check_layers()
    assert layers["missing"] == {}
    assert {"network", "mount", "pid", "ipc"} <= set(layers["namespaces"])
    assert os.path.realpath(os.__file__).rsplit("/", 1)[0] in layers["root"]
    assert "/dev/null" in layers["root"] and not {"/proc", "/tmp", "/home"} & set(layers["root"])
    assert layers["landlock"]["abi"] >= 6 and layers["landlock"]["tcp"] and \
        layers["landlock"]["scoped"]
    assert layers["seccomp"] is True
    assert layers["uid"] == ("private" if os.geteuid() == 0 else "mapped")
    with pytest.raises(ConfigError):
        PolicyWorker(COUNTER, "Counter", layers=("docker",))


def test_hook_mode_runs_policies():
    with PolicyWorker(COUNTER, "Counter", LIMITS, layers=()) as w:
        assert w.want == ()
        assert w.call([Call(1, "__init__"), Call(1, "count")]) == [None, 0]


def test_worker_environment_limits_and_identity(monkeypatch):
    monkeypatch.setenv("CSRO_TEST_SECRET", "sk-do-not-leak-1234")
    src = textwrap.dedent('''
        import os, resource, time
        class P:
            def act(self):
                R = resource
                return {"env": dict(os.environ), "cwd": os.getcwd(), "uid": os.getuid(),
                        "host": os.uname().nodename, "boot": time.clock_gettime(time.CLOCK_BOOTTIME),
                        "as": R.getrlimit(R.RLIMIT_AS)[0], "cpu": R.getrlimit(R.RLIMIT_CPU)[0],
                        "fsize": R.getrlimit(R.RLIMIT_FSIZE)[0],
                        "core": R.getrlimit(R.RLIMIT_CORE)[0],
                        "nproc": R.getrlimit(R.RLIMIT_NPROC)[0]}
    ''')
    with PolicyWorker(src, "P", LIMITS) as w:
        r = w.call([Call(0, "__init__"), Call(0, "act")])[1]
        assert "sk-do-not-leak" not in repr(r) and "CSRO_TEST_SECRET" not in r["env"]
        assert set(r["env"]) <= {"PYTHONHASHSEED", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                 "MKL_NUM_THREADS", "LC_ALL", "HOME"}
        assert r["env"]["HOME"] == "/"  # the root of its own
        assert r["cwd"] == "/" and os.listdir(w.workdir) == []  # the root of its own
        assert r["host"] == "sandbox"  # the UTS namespace's name, not the host's
        host_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        if "time" in w.layers["namespaces"]:  # its clocks start near 0: not the host's uptime
            assert r["boot"] < 30 and (host_boot < 60 or r["boot"] < host_boot - 30)
        assert r["as"] == 512 * 2 ** 20 and r["cpu"] == 20
        assert r["fsize"] == 0 and r["core"] == 0 and r["nproc"] == 0
        if os.geteuid() == 0:
            assert r["uid"] != 0 and r["uid"] != os.getuid()


def test_deterministic_hashing_and_seeded_random():
    src = "import random\nclass P:\n    def act(self):\n        return [hash('abc'), random.random()]\n"

    def run(seed):
        with PolicyWorker(src, "P", LIMITS, seed=seed) as w:
            return w.call([Call(0, "__init__"), Call(0, "act")])[1]
    a, b, c = run(1), run(1), run(2)
    assert a == b and a[0] == c[0] and a[1] != c[1]


def test_two_workers_are_separate_processes():
    with PolicyWorker(COUNTER, "Counter", LIMITS) as a, \
            PolicyWorker(COUNTER, "Counter", LIMITS) as b:
        a.call([Call(1, "__init__"), Call(1, "act", ({"legal": ["x", "y"]},))])
        b.call([Call(1, "__init__")])
        assert a.call([Call(1, "count")]) == [1] and b.call([Call(1, "count")]) == [0]
        assert a._p.proc.pid != b._p.proc.pid


def test_netns_worker_sees_no_network_interface():
    """Kernel-level check, independent of the audit hook: only a (down) loopback exists."""
    src = ("import socket\nclass P:\n    def act(self):\n"
           "        return [list(x) for x in socket.if_nameindex()]\n")
    with PolicyWorker(src, "P", LIMITS, layers=("namespaces",)) as w:
        assert w.call([Call(0, "__init__"), Call(0, "act")])[1] == [[1, "lo"]]


ROOT_VIEW = textwrap.dedent('''
    import os
    class P:
        def act(self):
            seen = []
            for top, dirs, files in os.walk("/"):
                seen += [os.path.join(top, n) for n in dirs + files]
                # not into a bind mount of an allowed path: its contents are the host's
                dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(top, d))]
            try:
                os.mkdir("/made-by-the-policy")
                made = True
            except OSError as e:
                made = e.errno
            return {"seen": seen, "links": [p for p in seen if os.path.islink(p)], "made": made,
                    "ro": bool(os.statvfs("/").f_flag & os.ST_RDONLY)}
''')


def test_the_worker_root_holds_only_what_it_may_read():
    """Kernel-level, the namespaces layer alone (no Landlock to hide the rest, no audit hook):
    the root has the bind-mounted paths and the directories and links on the way to them,
    read-only, and nothing else: no /proc, /sys, /tmp, /home or host file to stat."""
    with PolicyWorker(ROOT_VIEW, "P", LIMITS, layers=("namespaces",), python_layer=False) as w:
        r = w.call([Call(0, "__init__"), Call(0, "act")])[1]
        mounted = w.layers["root"]
    assert r["made"] == 30 and r["ro"]  # EROFS
    on_the_way = {p for m in mounted for p in _ancestors(m)}
    others = {p for p in r["seen"] if p not in on_the_way and p not in mounted}
    assert others == set(r["links"]), others  # /lib -> usr/lib and the like
    # (a checkout under /tmp or /home puts that directory on the way to the Python path, holding
    # only the way there: ``others`` above)
    assert not ({"/proc", "/sys", "/tmp", "/home", "/root/.bashrc", "/etc/passwd"} - on_the_way) & set(r["seen"])
    assert "/dev/null" in r["seen"] and "/etc/ld.so.cache" in r["seen"]


def _ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


ORPHAN_PARENT = textwrap.dedent('''
    import sys
    from csro.policies import Call, PolicyWorker, SandboxLimits
    src = "import time\\nclass P:\\n    def act(self):\\n        time.sleep(120)\\n"
    w = PolicyWorker(src, "P", SandboxLimits(memory_mb=512, call_seconds=300))
    assert w.start() is None
    print(w._p.proc.pid, w.workdir, flush=True)
    w.call([Call(0, "__init__"), Call(0, "act")])
''')


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_worker_dies_with_its_parent():
    import subprocess
    import sys
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_PARENT], stdout=subprocess.PIPE,
                              text=True)
    try:
        pid, workdir = parent.stdout.readline().split()
        pid = int(pid)
        time.sleep(0.2)  # the worker is now sleeping inside act()
        assert not _gone(pid)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 5
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _gone(pid)
    finally:
        parent.kill()
        parent.wait()
        os.rmdir(workdir)  # a parent killed with SIGKILL cannot remove it; nothing else leaks


def test_subprocess_imports_but_cannot_run():
    r = returns("__import__('subprocess').run(['true']).returncode")
    assert r.reason is Reason.FORBIDDEN and "subprocess.Popen" in r.detail
    assert returns("__import__('asyncio').__name__") == "asyncio"


def test_a_worker_that_cannot_set_up_raises_sandbox_error():
    with pytest.raises(SandboxError, match="could not set up"):
        PolicyWorker(COUNTER, "Counter", SandboxLimits(memory_mb=16)).start()


# ---------------------------------------------------------------- fail closed

def _broken_seccomp(monkeypatch):
    """A seccomp program the kernel refuses (one instruction, no return): the worker cannot
    apply that layer, as on a machine without it."""
    from csro.policies import _sandbox
    monkeypatch.setattr(_sandbox, "_seccomp_hex", lambda allow_missing: "00" * 8)


def test_a_layer_that_cannot_be_applied_stops_untrusted_code(monkeypatch):
    _broken_seccomp(monkeypatch)
    monkeypatch.delenv("CSRO_SANDBOX_ALLOW_MISSING", raising=False)
    with pytest.raises(SandboxError) as err:
        PolicyWorker(COUNTER, "Counter", LIMITS).start()
    text = str(err.value)
    assert "seccomp layer cannot be applied" in text and "PR_SET_SECCOMP" in text
    assert "sandbox.allow_missing: [seccomp]" in text and "CSRO_SANDBOX_ALLOW_MISSING" in text


@pytest.mark.parametrize("how", ["config", "environment"])
def test_a_missing_layer_runs_only_when_allowed_by_name(monkeypatch, how):
    _broken_seccomp(monkeypatch)
    limits = LIMITS
    if how == "config":
        limits = dataclasses.replace(LIMITS, allow_missing=("seccomp",))
    else:
        monkeypatch.setenv("CSRO_SANDBOX_ALLOW_MISSING", "seccomp")
    with PolicyWorker(COUNTER, "Counter", limits) as w:
        assert w.call([Call(1, "__init__"), Call(1, "count")]) == [None, 0]
        assert set(w.layers["missing"]) == {"seccomp"} and w.layers["seccomp"] is False
        assert w.layers["landlock"]["abi"] >= 1 and "network" in w.layers["namespaces"]


def test_an_unknown_layer_name_is_refused(monkeypatch):
    monkeypatch.setenv("CSRO_SANDBOX_ALLOW_MISSING", "apparmor")
    with pytest.raises(SandboxError, match="unknown sandbox layer.*apparmor"):
        PolicyWorker(COUNTER, "Counter", LIMITS)


def test_sandbox_check_command_prints_the_layers():
    import json
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "csro", "sandbox", "check", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["missing"] == {}
