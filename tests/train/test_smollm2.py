"""Real training steps of the embedded SmolLM2-135M (loaded from its GGUF): finite loss, weights move."""

import dataclasses
import math

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_real_smollm2_steps(tmp_path):
    from csro.train.config import train_config
    from csro.train.rollout import run_episodes
    from csro.train.trainer import TrainRun, update

    config = train_config(model="smollm2-135m", task="arith", steps=1, k=2, group_size=2,
                          tokens={"router": 2, "solver": 4, "verifier": 4, "aggregator": 4})
    run = TrainRun.create(config, tmp_path / "run")
    assert all("lora" in n for n in run.policy.trainable_state())
    summary = run.run()  # one whole recorded step: rollout, update, checkpoint
    step = run.store.steps()[0]
    assert summary["steps"] == 1 and math.isfinite(step["loss"]) and step["rows"] >= 5
    # Whether that step moved the weights depends on the rewards' variance. For a second
    # update on freshly sampled real events, the episodes' rewards are set to 0, 1, ... so
    # the advantage is non-zero whatever the model answered: the weights must move.
    rollout = run_episodes(run.policy, run.task, 1, 1, 2, version=1, seed=0)
    events = [dataclasses.replace(e, reward=float(e.event_id.split("/")[1])) for e in rollout.events]
    before = run.policy.trainable_state()
    info = update(run.policy, run.optimizer, events, config, step=1)
    after = run.policy.trainable_state()
    run.store.close()
    assert math.isfinite(info["loss"]) and info["dropped_events"] == 0
    assert any(not torch.equal(before[n], after[n]) for n in before)
