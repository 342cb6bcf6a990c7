"""One real training step of the embedded SmolLM2-135M (from its GGUF): finite loss, weights move."""

import math

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_one_real_smollm2_step(tmp_path):
    from csro.train.config import train_config
    from csro.train.trainer import TrainRun

    config = train_config(model="smollm2-135m", task="arith", steps=1, k=2, group_size=2,
                          tokens={"router": 2, "solver": 4, "verifier": 4, "aggregator": 4})
    run = TrainRun.create(config, tmp_path / "run")
    before = run.policy.trainable_state()
    summary = run.run()
    after = run.policy.trainable_state()
    step = run.store.steps()[0]
    run.store.close()
    assert summary["steps"] == 1 and math.isfinite(step["loss"]) and step["rows"] >= 5
    moved = [n for n in before if not torch.equal(before[n], after[n])]
    assert moved and all("lora" in n for n in before)
