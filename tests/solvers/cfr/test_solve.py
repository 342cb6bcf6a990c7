"""``solve`` and the ``csro solve`` command."""

import json
import subprocess
import sys

import pytest

from csro.errors import ConfigError
from csro.solvers.cfr import SolveConfig, log_checkpoints, solve


def test_config_validation():
    with pytest.raises(ConfigError, match="iterations must be >= 1"):
        SolveConfig("kuhn_poker", "cfr", 0)
    with pytest.raises(ConfigError, match="integer"):
        SolveConfig("kuhn_poker", "cfr", 2.5)
    with pytest.raises(ConfigError, match="unknown CFR algorithm"):
        SolveConfig("kuhn_poker", "nope", 10)
    with pytest.raises(ConfigError, match="checkpoints"):
        SolveConfig("kuhn_poker", "cfr", 10, (0, 11))


def test_log_checkpoints():
    points = log_checkpoints(1000)
    assert points[0] == 1 and points[-1] == 1000 and list(points) == sorted(set(points))
    assert 15 <= len(points) <= 24
    assert log_checkpoints(1) == (1,)


def test_solve_result_and_curve():
    result = solve(SolveConfig("kuhn_poker", "cfr+", 50, (1, 10)))
    assert [p.iteration for p in result.curve] == [1, 10, 50]
    assert result.curve[-1].exploitability == result.exploitability
    assert result.exploitability == pytest.approx(result.nash_conv / 2)
    assert set(result.to_json()) == {"game", "algo", "iterations", "nash_conv", "exploitability",
                                     "seconds"}


def _csro(*args):
    return subprocess.run([sys.executable, "-c", "from csro.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.integration
def test_cli_solve_json_and_curve(tmp_path):
    curve = tmp_path / "c.csv"
    proc = _csro("solve", "--game", "kuhn_poker", "--algo", "cfr+", "--iterations", "30",
                 "--json", "--curve", str(curve))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["game"] == "kuhn_poker" and out["iterations"] == 30
    assert out["exploitability"] == pytest.approx(out["nash_conv"] / 2)
    rows = curve.read_text().splitlines()
    assert rows[0] == "iteration,nash_conv,exploitability,seconds" and rows[-1].startswith("30,")


@pytest.mark.integration
@pytest.mark.parametrize("args, message", [
    (["--game", "kuhn_pokr", "--algo", "cfr", "--iterations", "5"], "unknown OpenSpiel game"),
    (["--game", "kuhn_poker", "--algo", "xcfr", "--iterations", "5"], "unknown CFR algorithm"),
    (["--game", "kuhn_poker", "--algo", "cfr", "--iterations", "-3"], "iterations must be >= 1"),
])
def test_cli_solve_errors_are_one_line_exit_2(args, message):
    proc = _csro("solve", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
