"""The escape corpus (``escapes.py``) as the user running the tests and as an ordinary user:
every attempt is contained (no trace in the World it attacks) and recorded as a forfeit."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

import csro
from tests.conftest import one_per_kind_fast

sys.path.insert(0, os.path.dirname(__file__))
import escapes  # noqa: E402

USER = "csro-sandbox-test"
DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "sandbox.md")


def documented_table(who: str) -> str:
    """The table of docs/sandbox.md between ``<!-- escape-table WHO -->`` and ``<!-- end -->``."""
    text = open(DOCS).read()
    start = text.index(f"<!-- escape-table {who} -->\n") + len(f"<!-- escape-table {who} -->\n")
    return text[start:text.index("<!-- end -->", start)]


@pytest.fixture(scope="module")
def world():
    w = escapes.World()
    yield w
    w.close()


@pytest.mark.parametrize("python_layer", [True, False], ids=["python-layer-on", "kernel-only"])
@pytest.mark.parametrize("attempt", one_per_kind_fast(escapes.ATTEMPTS, lambda a: a[1], lambda a: a[0]))
def test_escape_attempt_is_contained_and_recorded(world, attempt, python_layer):
    name, _, body = attempt
    outcome = escapes.attempt(world, name, body, python_layer)
    assert escapes.verdict(outcome) == [], outcome


def test_the_corpus_covers_every_kind_more_than_once():
    kinds = [k for _, k, _ in escapes.ATTEMPTS]
    assert all(kinds.count(k) >= 2 for k in kinds)
    assert {"read", "files", "persist", "sockets", "exec", "processes", "kernel", "recorder", "meta-read",
            "meta-write", "syscalls"} <= set(kinds)


def test_the_documented_table_holds_for_this_user():
    """docs/sandbox.md's table for whoever runs the tests (root in CI) is what the layers do."""
    who = "root" if os.geteuid() == 0 else "user"
    assert escapes.markdown_table(escapes.layer_table()) == documented_table(who)


def _ordinary_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/usr/sbin/nologin", USER],
                       check=True, capture_output=True)
        return pwd.getpwnam(USER)


def _as(user: pwd.struct_passwd, argv: list[str], env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                           "--init-groups", "--"] + argv, env=env, capture_output=True,
                          text=True, **kw)


@pytest.mark.skipif(os.geteuid() != 0, reason="the tests already run as an ordinary user")
@pytest.mark.slow
def test_escape_corpus_as_an_ordinary_user(tmp_path_factory):
    """CI runs as root: the same corpus, run by a user of its own (made here), from a copy
    of csro.policies that user can read, against a World of that user's (its home a directory of its own)."""
    import pyseccomp

    user = _ordinary_user()
    root = tempfile.mkdtemp(prefix="csro-escapes-")
    try:
        src = os.path.dirname(os.path.dirname(os.path.abspath(csro.__file__)))
        shutil.copytree(os.path.join(src, "csro", "policies"),
                        os.path.join(root, "csro", "policies"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        for f in ("__init__.py", "errors.py"):
            shutil.copy(os.path.join(src, "csro", f), os.path.join(root, "csro", f))
        shutil.copy(pyseccomp.__file__, root)
        shutil.copy(escapes.__file__, root)
        for d, dirs, files in os.walk(root):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        env = {"HOME": user.pw_dir, "PATH": "/usr/bin:/bin", "PYTHONPATH": root,
               "LC_ALL": "C.UTF-8"}
        probe = "import csro.policies as p; p.check_layers()"  # starts a worker
        python = next((p for p in ("/usr/bin/python3.11", "/usr/bin/python3",
                                   os.path.realpath(sys.executable))
                       if _as(user, [p, "-c", probe], env).returncode == 0), None)
        assert python is not None, "no Python that the ordinary user can run csro.policies with"
        run = _as(user, [python, "-P", os.path.join(root, "escapes.py")], env, cwd=root,
                  timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        report = json.loads(run.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert report["uid"] == user.pw_uid != 0
    assert report["layers"]["missing"] == {} and "user" in report["layers"]["namespaces"]
    assert len(report["outcomes"]) == 2 * len(escapes.ATTEMPTS)
    wrong = {(o["name"], o["python_layer"]): escapes.verdict(o) for o in report["outcomes"]}
    assert {k: v for k, v in wrong.items() if v} == {}
    assert escapes.markdown_table(report["table"]) == documented_table("user")
