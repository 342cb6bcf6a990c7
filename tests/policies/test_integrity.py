"""The integrity corpus (``integrity.py``) played by ``csro eval`` / ``csro play`` as a user would
run them, as the user running the tests (root in CI) and as an ordinary user: without
``--seed`` no attempt does better than honest play (the run draws its seed: issue 37); with a
guessable ``--seed`` every ``seeds``/``naming`` attempt wins, so the attacks are real."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import numpy
import pytest

import csro
from csro.games import load_game
from tests.conftest import one_per_kind_fast

sys.path.insert(0, os.path.dirname(__file__))
import integrity  # noqa: E402
import timing  # noqa: E402
from test_escapes import _as, _ordinary_user  # noqa: E402

SRC = pathlib.Path(csro.__file__).resolve().parents[1]
SITE = pathlib.Path(numpy.__file__).resolve().parents[1]  # the environment's site-packages
BOTS = sorted(load_game("rrps").builtins())
MATCHES = 2


def command(kind: str, opponent: str, seed: int | None) -> list[str]:
    """The csro command line of an attempt (run from the folder holding ``attacker.py``)."""
    fixed = [] if seed is None else ["--seed", str(seed)]
    if kind == "play":
        return ["play", "--game", "rrps", f"{integrity.POLICY}.py", opponent, "--max-lines", "1", *fixed]
    return ["eval", "--game", "rrps", "--policy", f"{integrity.POLICY}.py", "--opponents", opponent,
            "--matches", str(MATCHES), "--processes", "1", "--json", *fixed]


def mean_return(kind: str, stdout: str) -> float:
    """The attacker's mean return: from eval's JSON, or the line ``attacker: +N`` of play. An
    attempt the audit hook refused lost its matches as ``forbidden`` (contained and recorded);
    it was stopped for no other reason."""
    if kind == "play":
        return float(re.search(rf"^{integrity.POLICY}: ([-+0-9.e]+)$", stdout, re.M).group(1))
    (entry,) = json.loads(stdout)["results"]
    assert set(entry["forfeits"]) <= {"forbidden"}, entry
    return entry["pop_return"]


def play(where: pathlib.Path, name: str, seed: int | None, runner=None) -> float:
    _, cmd, kind, opponent, body = next(a for a in integrity.ATTEMPTS if a[0] == name)
    (where / f"{integrity.POLICY}.py").write_text(integrity.source(body, BOTS))
    os.chmod(where / f"{integrity.POLICY}.py", 0o644)
    argv = command(cmd, opponent, seed)
    proc = (runner or _as_root)(argv, where)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return mean_return(cmd, proc.stdout)


def _as_root(argv: list[str], where: pathlib.Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "csro", *argv], cwd=where, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("attempt", one_per_kind_fast(integrity.ATTEMPTS, lambda a: a[2], lambda a: a[0]))
def test_an_attempt_plays_no_better_than_honest_play(tmp_path, attempt):
    name, _, kind = attempt[:3]
    assert integrity.honest(kind, play(tmp_path, name, None))


@pytest.mark.parametrize("attempt", one_per_kind_fast([a for a in integrity.ATTEMPTS if a[2] != "referee"],
                                                      lambda a: a[2], lambda a: a[0]))
def test_an_attempt_wins_where_the_user_fixed_a_guessable_seed(tmp_path, attempt):
    """The positive control: the same program beats its opponent when the seed is public, so
    the bound above is not met by a broken attack."""
    name, _, kind = attempt[:3]
    assert integrity.won(kind, play(tmp_path, name, integrity.GUESSABLE_SEED))


def pooled_return(where: pathlib.Path, name: str, isolate: bool, runner=None) -> float:
    """The mean return of a pooling attempt over ``POOLED`` matches against rockbot."""
    (where / "pool.py").write_text(integrity.pooling_source(*integrity.POOLING[name]))
    os.chmod(where / "pool.py", 0o644)
    argv = ["eval", "--game", "rrps", "--policy", "pool.py", "--opponents", "builtin:rockbot", "--matches",
            str(integrity.POOLED), "--processes", "1", "--json", *(["--isolate-matches"] if isolate else [])]
    proc = (runner or _as_root)(argv, where)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (entry,) = json.loads(proc.stdout)["results"]
    assert entry["forfeits"] == {}, entry
    return entry["pop_return"]


@pytest.mark.parametrize("name", list(integrity.POOLING))
def test_isolated_matches_cannot_pool(tmp_path, name):
    assert pooled_return(tmp_path, name, isolate=True) == -1000.0


@pytest.mark.xfail(strict=True, reason="issue 37 item 3(b) holds only with --isolate-matches: by default the "
                                       "instances of a policy in one chunk share its worker process "
                                       "(docs/sandbox.md, 'A policy's own instances')")
@pytest.mark.parametrize("name", list(integrity.POOLING))
def test_instances_of_different_matches_cannot_pool(tmp_path, name):
    assert pooled_return(tmp_path, name, isolate=False) == -1000.0  # today: +750, what 8 pooled matches win


def test_the_corpus_covers_every_kind_more_than_once():
    kinds = [a[2] for a in integrity.ATTEMPTS]
    assert {"seeds", "naming", "referee"} <= set(kinds) and all(kinds.count(k) >= 2 for k in kinds)
    assert len(timing.ATTACKERS) >= 2


@pytest.mark.slow
def test_the_clock_tells_a_policy_no_move_it_is_about_to_face():
    """Timing attempts against an opponent whose work gives its throw away, built-in and code:
    none beats honest play, and the probe sees the opponent's work on the rounds it was shown
    (the channel is real) but not on the round it answers."""
    assert timing.verdict(timing.run()) == []


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the tests already run as an ordinary user")
def test_the_corpus_as_an_ordinary_user():
    """CI runs as root: every attempt again, by csro run as a user of its own (made here), from
    a folder that user owns; none does better than honest play, and the controls still win
    (the pooling attempts: isolated matches lose every throw, batched ones pool)."""
    user = _ordinary_user()
    root = pathlib.Path(tempfile.mkdtemp(prefix="csro-integrity-"))
    env = {"HOME": user.pw_dir, "PATH": "/usr/bin:/bin", "PYTHONPATH": f"{SRC}:{SITE}", "LC_ALL": "C.UTF-8"}
    probe = "import os, csro.policies as p; p.check_layers(); print(os.getuid())"  # starts a worker
    python = next((p for p in (os.path.realpath(sys.executable), "/usr/bin/python3.11", "/usr/bin/python3")
                   if _as(user, [p, "-c", probe], env).stdout.strip() == str(user.pw_uid)), None)
    assert python is not None, "no Python that the ordinary user can run csro with"

    def as_user(argv: list[str], where: pathlib.Path) -> subprocess.CompletedProcess:
        return _as(user, [python, "-m", "csro", *argv], env, cwd=where, timeout=600)

    try:
        os.chown(root, user.pw_uid, user.pw_gid)
        failed = {}
        for name, _, kind, _, _ in integrity.ATTEMPTS:
            drawn = play(root, name, None, as_user)
            fixed = play(root, name, integrity.GUESSABLE_SEED, as_user) if kind != "referee" else None
            if not integrity.honest(kind, drawn) or (fixed is not None and not integrity.won(kind, fixed)):
                failed[name] = (drawn, fixed)
        for name in integrity.POOLING:
            isolated, batched = (pooled_return(root, name, isolate, as_user) for isolate in (True, False))
            if isolated != -1000.0 or batched <= 0:  # the batched default is the control: the mark is left
                failed[name] = (isolated, batched)
        assert failed == {}
        shutil.copy(timing.__file__, root)
        clock = _as(user, [python, str(root / "timing.py")], env, cwd=root, timeout=600)
        assert clock.returncode == 0, clock.stderr[-3000:]
        report = json.loads(clock.stdout.strip().splitlines()[-1])
        assert report["uid"] == user.pw_uid and timing.verdict(report) == []
    finally:
        shutil.rmtree(root, ignore_errors=True)
