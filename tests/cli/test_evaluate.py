"""The eval/exploit/play/games commands, run as a user would (a real subprocess)."""

import json
import os
import subprocess
import sys

import pytest

CSRO = [sys.executable, "-m", "csro"]


def run(*args, check=True):
    proc = subprocess.run([*CSRO, *args], capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


def test_games_lists_rrps_and_leduc():
    out = json.loads(run("games", "--json").stdout)
    names = [g["name"] for g in out]
    assert "rrps" in names and "leduc" in names


def test_eval_json_shape():
    out = json.loads(run("eval", "--game", "rrps", "--policy", "builtin:greenberg",
                         "--policy", "examples/policies/rrps_frequency.py",
                         "--opponents", "builtin:rotatebot,builtin:randbot", "--matches", "2", "--json").stdout)
    assert [r["policy"] for r in out["results"]] == ["builtin:greenberg", "rrps_frequency"]
    for entry in out["results"]:
        assert set(entry) >= {"policy", "pop_return", "pop_expl", "agg_score", "ci95", "matches",
                              "per_opponent", "forfeits"}
        assert entry["matches"] == 4
        assert set(entry["per_opponent"]) == {"builtin:rotatebot", "builtin:randbot"}


def test_eval_opponents_may_name_the_held_out_bots_issue_40():
    from csro.games.rrps import HELDOUT_BOTS

    out = json.loads(run("eval", "--game", "rrps(num_throws=10)", "--policy", "builtin:random",
                         "--opponents", "bots-heldout", "--matches", "1", "--json").stdout)
    assert out["opponents"] == [f"builtin:{n}" for n in HELDOUT_BOTS]


def test_exploit_uniform_random_kuhn():
    out = json.loads(run("exploit", "--game", "kuhn_poker", "--policy", "builtin:random", "--json").stdout)
    assert out["nash_conv"] == pytest.approx(11 / 12, abs=1e-9)
    assert out["exploitability"] == pytest.approx(11 / 24, abs=1e-9)


def test_play_prints_a_trace():
    out = run("play", "--game", "kuhn_poker", "examples/policies/kuhn_simple.py", "builtin:random").stdout
    assert "act ->" in out and "kuhn_simple" in out


@pytest.mark.parametrize("args, needle", [
    (("eval", "--game", "no_such_game", "--policy", "builtin:random"), "no_such_game"),
    (("eval", "--game", "rrps", "--policy", "missing_file.py"), "missing_file.py"),
    (("eval", "--game", "rrps", "--policy", "builtin:nobody"), "builtin:nobody"),
    (("eval", "--game", "rrps", "--policy", "builtin:randbot", "--matches", "0"), "matches"),
    (("exploit", "--game", "kuhn_poker", "--policy", "builtin:random", "--sigma", "x"), "--sigma"),
    (("eval", "--bogus-flag"), "bogus"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
    proc = run(*args, check=False)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_eval_draws_its_seed_unless_given_one_and_a_given_seed_repeats_the_matches():
    """Without --seed no policy can guess the seeds (issue 37): each eval draws one and shows it;
    --seed S plays the same matches again, the drawn one included."""
    args = ("eval", "--game", "rrps", "--policy", "builtin:random", "--opponents", "builtin:random,builtin:randbot",
            "--matches", "2", "--processes", "1", "--json")
    fixed = [json.loads(run(*args, "--seed", "5").stdout) for _ in range(2)]
    assert fixed[0] == fixed[1] and fixed[0]["seed"] == 5
    drawn = [json.loads(run(*args).stdout) for _ in range(2)]
    assert drawn[0]["seed"] != drawn[1]["seed"] and drawn[0]["results"] != drawn[1]["results"]
    assert json.loads(run(*args, "--seed", str(drawn[0]["seed"])).stdout) == drawn[0]


def test_play_shows_the_seed_it_drew_and_replays_with_it():
    args = ("play", "--game", "rrps", "builtin:random", "builtin:randbot", "--max-lines", "0")
    first = run(*args).stdout
    seed = first.strip().splitlines()[-1].split()[1]
    assert run(*args, "--seed", seed).stdout == first
