"""A corpus of hostile policies: each must lose with the right Reason, without its side effect
happening, and without disturbing a well-behaved worker that runs at the same time."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import textwrap
import threading
import uuid

import pytest

from csro.policies import Call, Forfeit, PolicyWorker, Reason, SandboxLimits
from csro.policies._layers import LAYERS
from tests.conftest import one_per_kind_fast

SECRET = "sk-csro-test-secret-0f9e8d7c"
R = Reason


@dataclasses.dataclass
class Case:
    name: str
    body: str  # the body of act(self), or of the module when where == "module"
    reasons: tuple[Reason, ...]  # acceptable outcomes of the act call (or of start())
    where: str = "act"
    layers: tuple = LAYERS  # the kernel layers under the worker (() = the audit hook alone)
    limits: dict = dataclasses.field(default_factory=dict)
    check: str = ""  # name of an extra side-effect check below
    alive: bool | None = None  # whether the worker must survive the call


OK = None  # the call returns normally ("rock")
FIND_REPLY_FD = ("f = sys._getframe()\nwhile f is not None:\n    if 'cfg' in f.f_locals:\n"
                 "        rep = f.f_locals['cfg']['rep']\n    f = f.f_back\n")

CASES = [
    Case("fork_bomb", "while True:\n    os.fork()", (R.FORBIDDEN,), alive=True),
    Case("fork_caught", "for _ in range(100):\n    try:\n        os.fork()\n"
         "    except BaseException:\n        pass\nreturn 'rock'", (R.FORBIDDEN,), alive=True),
    Case("fork_at_module_level", "os.fork()", (R.FORBIDDEN,), where="module"),
    Case("subprocess", "import subprocess\nsubprocess.run(['touch', MARKER])", (R.FORBIDDEN,),
         check="marker"),
    Case("os_system", "os.system('touch ' + MARKER)", (R.FORBIDDEN,), check="marker"),
    Case("os_execv", "os.execv('/bin/sh', ['sh', '-c', 'touch ' + MARKER])", (R.FORBIDDEN,),
         check="marker"),
    Case("posixsubprocess", "import _posixsubprocess\n_posixsubprocess.fork_exec("
         "['/bin/sh'], [b'/bin/sh'], True, (), None, None, -1, -1, -1, -1, -1, -1, -1, -1,"
         " False, False, None, None, None, -1, None, False)\nreturn 'rock'", (R.FORBIDDEN,)),
    Case("raw_thread", "import _thread\n_thread.start_new_thread(os.fork, ())\nreturn 'rock'",
         (R.FORBIDDEN,)),
    Case("threading_escape", "import threading\nthreading.Thread(target=lambda: "
         "open(MARKER, 'w')).start()\nreturn 'rock'", (R.FORBIDDEN,),
         check="marker", alive=True),
    Case("memory_bomb", "b = []\nwhile True:\n    b.append(bytearray(10 ** 7))", (R.MEMORY,),
         limits={"memory_mb": 256, "call_seconds": 20}, alive=False),
    Case("memory_bomb_at_module_level", "x = bytearray(4 * 1024 ** 3)", (R.MEMORY,),
         where="module"),
    Case("infinite_loop", "while True:\n    pass", (R.TIMEOUT,), alive=False),
    Case("busy_cpu", "while True:\n    pass", (R.CPU_LIMIT,),
         limits={"cpu_seconds": 1, "call_seconds": 20}, alive=False),
    Case("busy_cpu_ignoring_sigxcpu", "import signal\n"
         "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass", (R.CPU_LIMIT,),
         limits={"cpu_seconds": 1, "call_seconds": 20}, alive=False),
    Case("slow_call", "import time\ntime.sleep(30)\nreturn 'rock'", (R.TIMEOUT,), alive=False),
    Case("signal_tricks", "import signal\nfor s in (signal.SIGTERM, signal.SIGALRM, "
         "signal.SIGINT, signal.SIGHUP):\n    signal.signal(s, signal.SIG_IGN)\n"
         "while True:\n    pass", (R.TIMEOUT,), alive=False),
    Case("socket_connect", "import socket\nsocket.create_connection(('127.0.0.1', PORT), "
         "timeout=0.5)\nreturn 'rock'", (R.FORBIDDEN,), check="no_connection"),
    Case("socket_connect_hook_mode", "import socket\ns = socket.socket()\n"
         "s.connect(('127.0.0.1', PORT))\nreturn 'rock'", (R.FORBIDDEN,), layers=(),
         check="no_connection"),
    Case("raw_socket_call", "import _socket\n_socket.socket().connect(('127.0.0.1', PORT))",
         (R.FORBIDDEN,), check="no_connection"),
    Case("read_etc_passwd", "return open('/etc/passwd').read()", (R.FORBIDDEN,),
         check="no_passwd"),
    Case("read_os_environ", "return dict(os.environ)", (OK,), check="no_secret"),
    Case("read_parent_environ", "return open('/proc/%d/environ' % os.getppid(), 'rb')"
         ".read().decode()", (R.FORBIDDEN,), check="no_secret"),
    Case("read_parent_environ_hook_mode", "try:\n    return open('/proc/%d/environ' % "
         "os.getppid()).read()\nexcept OSError as e:\n    return str(e)", (R.FORBIDDEN,),
         layers=(), check="no_secret"),
    Case("write_file_in_cwd", "open('pwned.txt', 'w').write('x')\nreturn 'rock'",
         (R.FORBIDDEN,), check="cwd_empty"),
    Case("write_file_in_tmp", "with open(MARKER, 'w') as f:\n    f.write('x')\nreturn 'rock'",
         (R.FORBIDDEN,), check="marker"),
    Case("os_open_for_writing", "fd = os.open(MARKER, os.O_WRONLY | os.O_CREAT)\n"
         "return 'rock'", (R.FORBIDDEN,), check="marker"),
    Case("mkfifo_in_tmp", "os.mkfifo(MARKER)\nreturn 'rock'", (R.FORBIDDEN,),
         check="marker"),
    Case("delete_a_file", "os.remove(VICTIM)\nreturn 'rock'", (R.FORBIDDEN,),
         check="victim_exists"),
    Case("rename_a_file", "os.rename(VICTIM, MARKER)\nreturn 'rock'", (R.FORBIDDEN,),
         check="victim_exists"),
    Case("chmod_the_workdir", "os.chmod('.', 0o777)\nreturn 'rock'", (R.FORBIDDEN,)),
    Case("kill_parent", "import signal\nos.kill(os.getppid(), signal.SIGKILL)", (R.FORBIDDEN,)),
    Case("kill_other_process", "os.kill(VICTIM_PID, 9)", (R.FORBIDDEN,),
         check="victim_alive"),
    Case("kill_other_process_hook_mode", "os.kill(VICTIM_PID, 9)", (R.FORBIDDEN,),
         layers=(), check="victim_alive"),
    Case("killpg_parent", "os.killpg(os.getpgid(os.getppid()), 9)", (R.FORBIDDEN,)),
    Case("pidfd_kill", "import signal\nsignal.pidfd_send_signal(os.pidfd_open(VICTIM_PID), 9)",
         (R.FORBIDDEN,), check="victim_alive"),
    Case("sys_exit", "sys.exit(3)", (R.CRASH,), alive=False),
    Case("os_exit", "os._exit(0)", (R.CRASH,), alive=False),
    Case("raise_system_exit", "raise SystemExit('bye')", (R.CRASH,), alive=False),
    Case("raise_keyboard_interrupt", "raise KeyboardInterrupt", (R.EXCEPTION,), alive=True),
    Case("raise_base_exception", "raise BaseException('base')", (R.EXCEPTION,), alive=True),
    Case("stdout_flood", "while True:\n    print('x' * 1000)", (R.TIMEOUT,), check="output"),
    Case("stdout_flood_finite", "sys.stdout.write('y' * 10_000_000)\nreturn 'rock'", (OK,),
         check="output", alive=True),
    Case("deep_recursion", "def f(n):\n    return f(n + 1)\nreturn f(0)", (R.EXCEPTION,),
         alive=True),
    Case("c_stack_overflow", "sys.setrecursionlimit(10 ** 9)\nimport json\nx = []\n"
         "for _ in range(300_000):\n    x = [x]\nreturn json.dumps(x)", (R.CRASH,), alive=False),
    Case("ctypes_segfault", "import ctypes\nreturn ctypes.string_at(0)", (R.FORBIDDEN,)),
    Case("ctypes_libc", "import ctypes\nctypes.CDLL(None).kill(os.getppid(), 9)",
         (R.FORBIDDEN,)),
    Case("monkeypatch_builtins_json", "import json, builtins\n"
         "json.dumps = lambda *a, **k: 'garbage'\n"
         "json.JSONEncoder.encode = lambda *a, **k: 'garbage'\n"
         "json.JSONEncoder.iterencode = lambda *a, **k: iter(['garbage'])\n"
         "builtins.len = lambda x: 0\nbuiltins.type = lambda x: str\n"
         "builtins.isinstance = lambda a, b: True\nreturn 'rock'", (OK, R.MALFORMED)),
    Case("huge_return_value", "return 'x' * (100 * 1024 * 1024)", (R.MALFORMED,), alive=True),
    Case("return_object", "return object()", (R.MALFORMED,), alive=True),
    Case("return_lambda", "return lambda: 'rock'", (R.MALFORMED,), alive=True),
    Case("return_nan", "return float('nan')", (R.MALFORMED,), alive=True),
    Case("return_str_subclass", "class S(str):\n    def __str__(self):\n"
         "        os.fork()\nreturn S('rock')", (R.MALFORMED,), alive=True),
    Case("frame_walk_write_garbage_to_reply_fd", FIND_REPLY_FD +
         "os.write(rep, b'\\x00\\x00\\x00\\x05hello')\nreturn 'rock'",
         (R.MALFORMED, R.CRASH), alive=False),
    Case("gc_walk", "import gc\nfor o in gc.get_objects():\n    pass", (R.FORBIDDEN,)),
    # Every fd up to the usual 1024 limit: the worker keeps the parent's fd numbers
    # (pass_fds), which are high when the parent has many files open (a long test run).
    # Garbage on the recorder channel is FORBIDDEN (only the audit hook writes there).
    Case("garbage_on_every_fd", "for fd in range(3, 1024):\n    try:\n"
         "        os.write(fd, b'\\xff\\xff\\xff\\xffgarbage')\n    except OSError:\n"
         "        pass\nreturn 'rock'", (R.MALFORMED, R.CRASH, R.FORBIDDEN), alive=False),
    Case("garbage_on_fd_1_2", "os.write(1, b'\\x00\\x00\\x00\\x05hello\\xff')\n"
         "os.write(2, b'\\xff\\xfe')\nreturn 'rock'", (OK,), alive=True),
    Case("dup2_over_reply_fd", FIND_REPLY_FD + "os.dup2(1, rep)\nreturn 'rock'", (R.MALFORMED, R.CRASH),
         alive=False),
    Case("add_audit_hook", "sys.addaudithook(lambda *a: None)\nreturn 'rock'", (R.FORBIDDEN,)),
    Case("settrace", "sys.settrace(lambda *a: None)\nreturn 'rock'", (R.FORBIDDEN,)),
    Case("crafted_code_object", "c = (lambda: 0).__code__\n"
         "return c.replace(co_code=b'\\x00' * len(c.co_code))", (R.FORBIDDEN,)),
    Case("swap_code", "def f():\n    pass\nf.__code__ = (lambda: 1).__code__\nreturn 'rock'",
         (R.FORBIDDEN,)),
    Case("marshal_crafted_code", "import marshal\n"
         "return marshal.loads(marshal.dumps((lambda: 0).__code__)) and 'rock'",
         (R.FORBIDDEN,)),
    Case("fresh_copy_of_posix", "import importlib.machinery, importlib.util\n"
         "m = importlib.util.module_from_spec(importlib.machinery.BuiltinImporter.find_spec("
         "'posix'))\nm.mkfifo(MARKER)\nreturn 'rock'", (R.FORBIDDEN,), check="marker"),
    Case("compile_bytecode_directly", "import importlib._bootstrap_external as e, marshal\n"
         "return str(e._compile_bytecode(marshal.dumps((lambda: 0).__code__)))", (R.FORBIDDEN,)),
    Case("raise_rlimit", "import resource\n"
         "resource.setrlimit(resource.RLIMIT_CPU, (10 ** 6, 10 ** 6))", (R.FORBIDDEN,)),
]

GOOD = textwrap.dedent('''
    class P:
        def __init__(self):
            self.n = 0
        def act(self, k):
            self.n += 1
            return [k, self.n]
''')


def source(case: Case, names: dict) -> str:
    consts = "".join(f"{k} = {v!r}\n" for k, v in names.items())
    body = textwrap.indent(case.body, "    " if case.where == "module" else "        ")
    if case.where == "module":
        return f"import os, sys\n{consts}if True:\n{body}\nclass P:\n    pass\n"
    return (f"import os, sys\n{consts}class P:\n    def __init__(self):\n        pass\n"
            f"    def act(self):\n{body}\n")


@pytest.fixture
def listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)
    yield s
    s.close()


@pytest.fixture
def victim(tmp_path):
    """A process and a file that the policy must not be able to kill or remove."""
    proc = subprocess.Popen(["sleep", "60"])
    path = tmp_path / "victim.txt"
    path.write_text("still here")
    os.chmod(tmp_path, 0o777)
    yield proc, str(path)
    proc.kill()
    proc.wait()


class Neighbour:
    """A well-behaved worker calling away in a thread while the hostile one misbehaves."""

    def __init__(self) -> None:
        self.worker = PolicyWorker(GOOD, "P", SandboxLimits(memory_mb=512, call_seconds=10))
        assert self.worker.start() is None
        assert self.worker.call([Call(0, "__init__"), Call(1, "__init__")]) == [None, None]
        self.done = threading.Event()
        self.rounds: list[list] = []
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.is_set() or len(self.rounds) < 3:
            self.rounds.append(self.worker.call([Call(0, "act", ("a",)), Call(1, "act", ("b",))]))
            self.done.wait(0.02)

    def finish(self) -> None:
        self.done.set()
        self.thread.join(30)
        n = len(self.rounds)
        assert self.rounds == [[["a", i], ["b", i]] for i in range(1, n + 1)]
        self.worker.close()


def _outcome_kind(case: Case) -> str:
    """Cases alike in where they run, what they may end in and what is checked after."""
    return f"{case.where}:{case.reasons}:{case.check}:{case.layers}"


@pytest.mark.parametrize("case", one_per_kind_fast(CASES, _outcome_kind, lambda c: c.name))
def test_hostile_policy(case, listener, victim, tmp_path, monkeypatch):
    monkeypatch.setenv("CSRO_SECRET_TOKEN", SECRET)
    victim_proc, victim_path = victim
    marker = f"/tmp/csro-pwned-{uuid.uuid4().hex}"
    names = {"MARKER": marker, "PORT": listener.getsockname()[1], "VICTIM": victim_path,
             "VICTIM_PID": victim_proc.pid}
    limits = SandboxLimits(**{"memory_mb": 512, "cpu_seconds": 20, "call_seconds": 1.0,
                              "start_seconds": 10, "output_bytes": 4000, **case.limits})
    neighbour = Neighbour()
    try:
        with PolicyWorker(source(case, names), "P", limits, layers=case.layers) as w:
            started = w.start()
            if case.where == "module":
                result = started
                assert isinstance(result, Forfeit), result
            else:
                assert started is None, started
                workdir = w.workdir
                result = w.call([Call(0, "__init__"), Call(0, "act")])[1]
                if case.check == "cwd_empty":
                    assert os.listdir(workdir) == []
            got = result.reason if isinstance(result, Forfeit) else OK
            assert got in case.reasons, result
            if OK in case.reasons and got is OK:
                assert result == "rock" or case.check == "no_secret", result
            if case.alive is not None:
                assert w.alive is case.alive, w.dead_reason
            if w.alive:  # a worker that survived still works
                assert w.call([Call(5, "__init__")]) == [None]
            else:
                assert w.call([Call(5, "__init__")]) == [w.dead_reason]
            output = w.output()
    finally:
        neighbour.finish()

    assert os.getpid() > 0 and not os.path.exists(marker)
    if case.check == "no_connection":
        with pytest.raises(BlockingIOError):
            listener.accept()
    if case.check == "no_passwd":
        assert "root:" not in repr(result)
    if case.check == "no_secret":
        assert SECRET not in repr(result) and SECRET not in output
    if case.check == "victim_exists":
        assert open(victim_path).read() == "still here"
    if case.check == "victim_alive":
        assert victim_proc.poll() is None
    if case.check == "output":
        assert len(output.encode()) <= 4000 + 100
    assert signal.getsignal(signal.SIGINT) is not None  # the parent is intact


def test_corpus_is_large_enough():
    assert len(CASES) >= 25
