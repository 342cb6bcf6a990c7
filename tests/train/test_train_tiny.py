"""Real training runs with a tiny randomly initialised model (built in-process, no download)."""

import json
import math

import pytest
import yaml

torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from csro.cli import app  # noqa: E402
from csro.train.config import train_config  # noqa: E402
from csro.train.events import Event  # noqa: E402
from csro.train.model import ByteTokenizer, load_policy, token_logprobs  # noqa: E402
from csro.train.store import TrainStore  # noqa: E402
from csro.train.trainer import TrainRun, update  # noqa: E402

TOKENS = {"router": 2, "solver": 4, "verifier": 4, "aggregator": 3}


def _config(**kw):
    return train_config(model="tiny", task="arith", steps=3, k=2, group_size=2, tokens=TOKENS, lr=1e-2, **kw)


@pytest.mark.slow
def test_three_step_cpu_run_trains_and_records(tmp_path):
    run = TrainRun.create(_config(), tmp_path / "run")
    before = run.policy.trainable_state()
    summary = run.run()
    after = run.policy.trainable_state()
    steps = run.store.steps()
    run.store.close()
    assert summary["steps"] == 3 and [s["step"] for s in steps] == [0, 1, 2]
    assert all(math.isfinite(s["loss"]) and s["dropped_events"] == 0 for s in steps)
    assert all(s["events"] == 2 * 4 for s in steps)  # 2 episodes x 4 stages
    assert any(max(s["rewards"]) > min(s["rewards"]) for s in steps)  # a step with a non-zero advantage
    assert any(not torch.equal(before[n], after[n]) for n in before)  # so the LoRA weights moved
    with TrainStore.open(tmp_path / "run") as store:
        assert store.last_checkpoint()[0] == 2 and store.last_checkpoint()[1].is_file()
        assert len(list(store.checkpoint_dir.glob("step-*.pt"))) == 1
        events = store.events(0)
        assert {e["role"] for e in events} == {"router", "solver", "verifier", "aggregator"}
        assert all(e["k"] == len(e["completions"]) for e in events)


@pytest.mark.slow  # a whole run and a resumed one: make test (issue 39, the fast loop's minutes)
def test_resumed_run_continues_exactly(tmp_path):
    whole = TrainRun.create(_config(), tmp_path / "whole")
    whole.run()
    full = whole.policy.trainable_state()
    whole.store.close()
    part = TrainRun.create(_config().model_copy(update={"steps": 2}), tmp_path / "part")
    part.run()
    part.store.close()
    resumed = TrainRun.resume(tmp_path / "part", steps=3)
    assert resumed.start_step == 2
    resumed.run()
    got = resumed.policy.trainable_state()
    rewards = [s["reward_mean"] for s in resumed.store.steps()]
    resumed.store.close()
    assert all(torch.allclose(full[n], got[n], atol=1e-6) for n in full)
    with TrainStore.open(tmp_path / "whole") as store:
        assert rewards == [s["reward_mean"] for s in store.steps()]


@pytest.mark.slow  # a rollout and an update of the tiny model: make test (issue 39, the fast loop's minutes)
def test_an_event_with_a_missing_member_is_dropped_and_counted(tmp_path):
    config = _config(algo="srpo")
    run = TrainRun.create(config, tmp_path / "run")
    from csro.train.rollout import run_episodes

    rollout = run_episodes(run.policy, run.task, 0, 1, 2, version=0, seed=0)
    wide = next(e for e in rollout.events if e.k >= 2)
    broken = Event(wide.event_id, wide.group, wide.stage, wide.members[:-1], wide.reward)
    events = [broken if e is wide else e for e in rollout.events]
    info = update(run.policy, run.optimizer, events, config, step=0)
    run.store.close()
    assert info["dropped_events"] == 1 and info["events"] == len(events) - 1


def test_log_probs_count_completion_tokens_only_and_padding_does_not_leak():
    policy = load_policy("tiny", seed=1, lora_rank=0)
    tok = ByteTokenizer()
    prompts = [tok.chat([("user", "hi")]), tok.chat([("user", "a longer prompt")])]
    completions = [(65, 66, 67), (68,)]
    with torch.no_grad():
        lp, mask = token_logprobs(policy, prompts, completions)
        assert mask.tolist() == [[1, 1, 1], [1, 0, 0]] and lp[1, 1:].abs().sum() == 0
        for r in range(2):  # each row alone, no padding, by a plain full forward
            ids = torch.tensor([list(prompts[r]) + list(completions[r])])
            logp = torch.log_softmax(policy.model(input_ids=ids).logits[0], dim=-1)
            p = len(prompts[r])
            manual = [float(logp[p - 1 + t, c]) for t, c in enumerate(completions[r])]
            assert lp[r, :len(completions[r])].tolist() == pytest.approx(manual, abs=1e-4)


def _write(path, **fields):
    path.write_text(yaml.safe_dump({"kind": "train", "model": "tiny", "task": "arith", "k": 2, "group_size": 2,
                                    "tokens": {"router": 2, "solver": 3, "verifier": 3, "aggregator": 2}, **fields}))
    return path


@pytest.mark.parametrize("algo, norm", [("grpo", "sqrt"), ("drmas", "sqrt"), ("srpo", "singleton")])
def test_cli_run_trains_each_objective(tmp_path, algo, norm):
    out = tmp_path / algo
    config = _write(tmp_path / "train.yaml", algo=algo, steps=1)
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--set", f"norm={norm}"])
    assert result.exit_code == 0, result.output
    status = CliRunner().invoke(app, ["status", str(out), "--json"])
    s = json.loads(status.output)
    assert s["kind"] == "train" and s["algo"] == algo and s["done"] and len(s["reward_over_steps"]) == 1
    assert s["final"]["steps"] == 1
    assert f"report: {out / 'report.html'}" in result.output and (out / "report.html").is_file()


def test_cli_refuses_bad_input(tmp_path):
    import subprocess
    import sys

    config = _write(tmp_path / "train.yaml")
    for args, words in ((["--set", "task=chess"], "task"), (["--set", "steps=0"], "steps"),
                        (["--set", "norm=cube"], "norm")):
        proc = subprocess.run([sys.executable, "-m", "csro", "run", str(config), "--out", str(tmp_path / "x"), *args],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and proc.stderr.startswith("error: config field ") and words in proc.stderr, proc.stderr
        assert not (tmp_path / "x").exists()


def test_train_ablation_writes_the_table_and_plots(tmp_path):
    result = CliRunner().invoke(app, ["train-ablation", "--task", "arith", "--steps", "1", "--seeds", "1",
                                      "--model", "tiny", "--k", "2", "--group-size", "2", "--out", str(tmp_path),
                                      "--tokens", "router=2,solver=2,verifier=2,aggregator=2"])
    assert result.exit_code == 0, result.output
    table = (tmp_path / "ablation.md").read_text()
    for variant in ("srpo-sqrt", "srpo-sum", "srpo-mean", "srpo-singleton", "grpo", "drmas"):
        assert f"| {variant} |" in table
    assert (tmp_path / "ablation_rewards.png").stat().st_size > 1000
    assert (tmp_path / "ablation_rewards.svg").read_text().lstrip().startswith("<?xml")


def test_cli_resume_continues_an_interrupted_run_and_report_rewrites_its_page(tmp_path):
    out = tmp_path / "run"
    part = TrainRun.create(_config(algo="grpo"), out)
    part.step(0)  # as a run killed after its first step leaves it
    part.store.close()
    shown = CliRunner().invoke(app, ["status", str(out)])
    assert shown.exit_code == 0 and "1 of 3 steps finished" in shown.output
    resumed = CliRunner().invoke(app, ["resume", str(out)])
    assert resumed.exit_code == 0, resumed.output
    assert "step   1/3" in resumed.output and "step   0/3" not in resumed.output  # step 0 was not trained again
    with TrainStore.open(out) as store:
        assert [s["step"] for s in store.steps()] == [0, 1, 2] and store.config()["algo"] == "grpo"
        assert store.final()["steps"] == 3
    (out / "report.html").unlink()
    again = CliRunner().invoke(app, ["report", str(out)])
    assert again.exit_code == 0 and again.output.strip() == str(out / "report.html")
    page = (out / "report.html").read_text()
    assert "Reward over steps" in page and "<svg" in page and "grpo" in page
    exists = CliRunner().invoke(app, ["run", str(_write(tmp_path / "t.yaml")), "--out", str(out)])
    assert exists.exit_code != 0 and "csro resume" in str(exists.exception)


@pytest.mark.parametrize("bf16, tol", [(False, 1e-4), (True, 5e-2)])
def test_before_any_update_the_ratio_is_one_at_either_precision(tmp_path, bf16, tol):
    from csro.train.rollout import run_episodes
    from csro.train.trainer import advantages, objective

    config = _config(bf16=bf16)
    run = TrainRun.create(config, tmp_path / "run")
    rollout = run_episodes(run.policy, run.task, 0, 1, 2, version=0, seed=0)
    _, info = objective(run.policy, rollout.events, advantages(rollout.events, "srpo"), config)
    run.store.close()
    assert info["ratio_mean"] == pytest.approx(1.0, abs=tol) and info["clip_frac"] == 0.0


@pytest.mark.slow
def test_rrps_team_step_runs_the_whole_workflow(tmp_path):
    config = train_config(model="tiny", task="rrps-team", steps=1, k=2, group_size=2,
                          tokens={"proposer": 8, "selector": 2})
    run = TrainRun.create(config, tmp_path / "run")
    run.run()
    steps, events = run.store.steps(), run.store.events(0)
    run.store.close()
    assert [e["role"] for e in events].count("proposer") == 2 and all(e["k"] == 2 for e in events if e["role"] == "proposer")
    assert steps[0]["rewards"] == [-1.0, -1.0]  # random bytes define no Agent class: the game's minimum


def test_a_training_run_keys_the_matches_of_its_rewards_with_a_secret(tmp_path):
    """rrps-team's reward plays the written programs: their seeds derive from the run's secret
    (issue 37), drawn when the run is created and kept in its store."""
    with TrainStore.create(tmp_path / "a", {}) as a, TrainStore.create(tmp_path / "b", {}) as b:
        secret = a.secret()
        assert len(secret) == 64 and secret != b.secret()
    with TrainStore.open(tmp_path / "a") as again:
        assert again.secret() == secret
