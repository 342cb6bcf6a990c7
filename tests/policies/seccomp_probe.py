"""Run system calls under the worker's seccomp program and say how each ended.

Used by ``test_seccomp.py`` in a process of its own: reads JSON ``{"program": hex, "cases":
[[label, nr, [args...]], ...], "code": {label: hex machine code}}`` on stdin; for each case
forks a child that loads the program (as the worker does: no_new_privs, then
PR_SET_SECCOMP) and makes the call, or, for a label in ``code``, runs that machine code
(mapped before the filter, since the filter forbids executable anonymous memory). Prints
``{label: "returned" | "SIGSYS" | "SIGSEGV" | ... | "exit N"}`` as JSON: "returned" when
the call came back (the child marks a shared page, which needs no system call: under a
program that kills every call, the child's own exit is killed too). A case that is not
killed exits the child at once, so no call's effect outlives it.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import signal
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load(program: bytes) -> None:
    buf = ctypes.create_string_buffer(program, len(program))
    prog = Fprog(len(program) // 8, ctypes.addressof(buf))
    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(prog), 0, 0):
        os._exit(99)


def machine_code(code: bytes):
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    return m, ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))


def run(program: bytes | None, label: str, nr: int, args: list, code: dict) -> str:
    page, fn = machine_code(bytes.fromhex(code[label])) if label in code else (None, None)
    sys.stdout.flush()
    back = mmap.mmap(-1, 1)  # shared with the child
    pid = os.fork()
    if pid == 0:
        if program is not None:
            load(program)
        if fn is not None:
            fn()
        else:
            libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) for a in args])
        back[0] = 1
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if page is not None:
        page.close()
    if back[0]:
        return "returned"
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return f"exit {os.WEXITSTATUS(status)}"


if __name__ == "__main__":
    job = json.load(sys.stdin)
    program = bytes.fromhex(job["program"]) if job["program"] else None
    print(json.dumps({label: run(program, label, nr, args, job.get("code", {}))
                      for label, nr, args in job["cases"]}))
