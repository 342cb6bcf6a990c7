"""Helpers of the AOR run tests: the real CLI in a subprocess, and a small files-provider config."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import yaml

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "controllers"
REPLIES = pathlib.Path(__file__).resolve().parent / "replies"


def csro(*args, check: bool = True, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "csro", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if check:
        assert proc.returncode == 0, f"csro {' '.join(map(str, args))} failed:\n{proc.stderr[-3000:]}"
    return proc


def files_config(tmp_path: pathlib.Path, **fields) -> pathlib.Path:
    """Lift, 2 rewrite rounds of 2 episodes, the replies of tests/robots/replies."""
    config = {"kind": "aor", "task": "Lift", "rounds": 2, "episodes": 2, "horizon": 80, "max_repairs": 1,
              "camera": {"width": 64, "height": 48, "episodes_with_frames": 1},
              "llm": {"provider": "files", "path": str(REPLIES)}, **fields}
    path = tmp_path / "aor.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
