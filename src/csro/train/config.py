"""The training configuration (``kind: train``): one pydantic model, unknown fields refused."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from csro.config import RunRoot, parse_model


class TrainConfig(RunRoot):
    """Everything a training run depends on; stored in the run's ``train.db``."""

    kind: Literal["train"] = Field("train", description="the kind of run (csro run starts a training run)")
    task: Literal["arith", "rrps-team"] = Field("arith", description="the team workflow to train")
    algo: Literal["srpo", "grpo", "drmas"] = Field("srpo", description="objective")
    norm: Literal["sqrt", "sum", "mean", "singleton"] = Field("sqrt", description="srpo: set-ratio normalisation")
    steps: int = Field(30, ge=1, description="training steps (one rollout and update each)")
    k: int = Field(3, ge=1, le=8, description="parallel workers (solvers / proposers) at most")
    model: Literal["smollm2-135m", "tiny"] = Field("smollm2-135m", description="tiny: random 2-layer Llama, tests only")
    group_size: int = Field(4, ge=2, description="episodes per problem (the advantage's group)")
    problems_per_step: int = Field(1, ge=1)
    lr: float = Field(2e-3, gt=0, description="AdamW learning rate of the LoRA weights")
    clip_eps: float = Field(0.2, gt=0, lt=1)
    epochs: int = Field(1, ge=1, description="passes over each step's events")
    minibatch_rows: int = Field(8, ge=1, description="rows per mini-batch (whole events; a larger event goes alone)")
    lora_rank: int = Field(8, ge=0, description="0: train every weight")
    temperature: float = Field(1.0, gt=0)
    bf16: bool = Field(False, description="bf16 autocast for sampling, old and new log-probs alike")
    threads: int = Field(1, ge=1, description="torch CPU threads (1: two were 5-15x slower under load)")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    seed: int = 0
    tokens: dict[str, int] | None = Field(None, description="max new tokens per role (task defaults otherwise)")
    grad_clip: float = Field(1.0, gt=0)


def train_config(**values) -> TrainConfig:
    """A TrainConfig, or a ConfigError naming the first bad field."""
    return parse_model(TrainConfig, values)
