"""A real Ray cluster of two nodes on this machine, started the way a user starts one.

It follows the README's recipe ("Running on a Ray cluster") as two machines that never ran
Ray would: the head generates the cluster's token (``ray get-auth-token --generate``, into its
own ``~/.ray``), and the second node and every driver are handed it in ``RAY_AUTH_TOKEN``.
Each node has a ``$HOME`` of its own, so nothing in the tester's ``~/.ray`` (a token another
test's local Ray left there) can stand in for a missing step.

Each node is a ``ray start --block`` process (a head, then a second node joining it on
loopback) with a temporary directory of its own; stopping the cluster terminates these two
processes, which stop the Ray processes they started and nothing else on the machine.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

RAY = str(pathlib.Path(sys.executable).with_name("ray"))
START_TIMEOUT_S = 120.0


def ray_env(token: str, home: pathlib.Path | None = None) -> dict[str, str]:
    """The environment of a node or a driver of the cluster: Ray 2.60 turns token
    authentication on, so each says so and carries the head's token (``home``: the node's
    own ``$HOME``)."""
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    if home is not None:
        env["HOME"] = str(home)
    return env


def generate_token(home: pathlib.Path) -> str:
    """``ray get-auth-token --generate`` on a machine that has no token yet (the README's
    first step on the head): the new token, also saved in ``home/.ray/auth_token``."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_TOKEN")}
    done = subprocess.run([RAY, "get-auth-token", "--generate"], capture_output=True, text=True,
                          env={**env, "HOME": str(home), "RAY_AUTH_MODE": "token"}, timeout=60)
    token = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0 or not token or (home / ".ray" / "auth_token").read_text().strip() != token:
        raise RuntimeError(f"ray get-auth-token --generate failed ({done.returncode}): {done.stderr[-2000:]}")
    return token


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A head and a second node, each 1 CPU; ``address`` is what a driver connects to."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen] = []
        self.token = ""
        # Ray's session directory holds Unix sockets, whose paths may not pass 107 bytes: a
        # short directory of its own, not one under pytest's deep temporary paths.
        self.temp = pathlib.Path(tempfile.mkdtemp(prefix="ray-"))

    def start(self) -> "Cluster":
        self.token = generate_token(self.root / "head-home")
        head = ["--head", f"--port={self.port}", "--include-dashboard=false",
                f"--dashboard-agent-listen-port={free_port()}"]
        self._node("head", head)
        self._wait_for(1)
        self._node("node2", [f"--address={self.address}", f"--dashboard-agent-listen-port={free_port()}"],
                   temp=False)
        self._wait_for(2)
        return self

    def driver_env(self) -> dict[str, str]:
        """What a driver on another machine sets (the token; its own ``$HOME`` stays)."""
        return ray_env(self.token)

    def _node(self, name: str, args: list[str], temp: bool = True) -> None:
        log = open(self.root / f"{name}.log", "w")
        home = self.root / f"{name}-home"
        home.mkdir(exist_ok=True)
        self.nodes.append(subprocess.Popen(
            [RAY, "start", "--block", "--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
             *([f"--temp-dir={self.temp}"] if temp else []), *args],
            stdout=log, stderr=subprocess.STDOUT, env=ray_env(self.token, home), start_new_session=True))

    def _wait_for(self, nodes: int) -> None:
        """Until the cluster reports ``nodes`` live nodes (``ray status``)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.poll() is not None:
                    raise RuntimeError(f"a Ray node exited {node.returncode}: {self.logs()}")
            done = subprocess.run([RAY, "status", f"--address={self.address}"], capture_output=True, text=True,
                                  env=ray_env(self.token))
            active = done.stdout.partition("Active:")[2].partition("Pending:")[0]
            if done.returncode == 0 and active.count(" node_") >= nodes:
                return
            time.sleep(1.0)
        raise RuntimeError(f"the Ray cluster did not reach {nodes} nodes: {self.logs()}")

    def kill_raylet(self, index: int = 1) -> int:
        """``kill -9`` the raylet of node ``index`` (the second node by default); its pid."""
        for pid in _descendants(self.nodes[index].pid):
            try:
                name = pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if name == "raylet":
                os.kill(pid, signal.SIGKILL)
                return pid
        raise RuntimeError("no raylet under the second node")

    def logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in sorted(self.root.glob("*.log")))

    def stop(self) -> None:
        """Terminate the two ``ray start --block`` processes (they stop their own Ray
        processes), then kill whatever of their process groups is left."""
        for node in reversed(self.nodes):
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)
        for node in reversed(self.nodes):
            try:
                node.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(node.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.temp, ignore_errors=True)


def _descendants(pid: int) -> list[int]:
    """The pids of a process's descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
