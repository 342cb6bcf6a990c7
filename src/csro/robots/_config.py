"""The configuration of an Act–Observe–Rewrite run (``kind: aor``): YAML in, validated models out.

The shape follows the AOR loop (Kumar, arXiv 2603.04466): ``rounds`` rewrites, each judged by
``episodes`` evaluation episodes of the robosuite task. The paper gives no episode counts,
horizons or limits; every default here is ours, sized for a 2-core machine. The ``llm``
section is the one of ``csro run`` (``csro.config.LLMConfig``), so every provider works here.

Unknown keys are errors; a bad value raises ``ConfigError`` naming the field, e.g.
``config field episodes: Input should be greater than or equal to 1``.
"""

from __future__ import annotations

import pathlib
from typing import Any, Literal, Sequence

from pydantic import Field

from csro.config import LLMConfig, RunRoot, Section, apply_overrides, parse_model, read_yaml
from csro.llm import takes_images


class ControllerLimits(Section):
    """Limits of the sandboxed controller worker (see docs/aor.md)."""

    step_seconds: float = Field(1.0, gt=0, description="wall-clock limit of one get_action call")
    episode_seconds: float = Field(60.0, gt=0, description="wall-clock limit of the controller's calls summed over an episode")
    start_seconds: float = Field(20.0, gt=0, description="wall-clock limit for starting the worker and compiling the class")
    memory_mb: int = Field(1024, ge=128, description="address-space limit of the worker process")
    cpu_seconds: int = Field(600, ge=1, description="CPU-time limit of one worker process (one per evaluation)")


class CameraConfig(Section):
    """The key frames of each episode (rendered offscreen at phase changes and at the end)."""

    enabled: bool = Field(True, description="render key frames at all")
    name: str = Field("agentview", description="robosuite camera name")
    width: int = Field(160, ge=16, le=1024, description="frame width in pixels")
    height: int = Field(120, ge=16, le=1024, description="frame height in pixels")
    max_frames: int = Field(6, ge=1, le=50, description="key frames kept per episode (the last one is the end)")
    episodes_with_frames: int = Field(2, ge=0, description="evaluation episodes per controller that keep frames")


class AorConfig(RunRoot):
    """One AOR run: an initial controller, then ``rounds`` rewrites by the LLM."""

    kind: Literal["aor"] = Field("aor", description="the kind of run (csro run starts an AOR run)")
    task: str = Field("Lift", description="Lift | PickPlaceCan | Stack")
    rounds: int = Field(3, ge=0, description="rewrite rounds after the initial controller")
    episodes: int = Field(5, ge=1, description="evaluation episodes per controller (its success rate decides the best)")
    horizon: int = Field(200, ge=1, description="control steps per episode at most (20 Hz)")
    seed: int = Field(0, ge=0, description="episode i is reset with seed + i, for every controller alike")
    initial_controller: str | None = Field(
        None, description="a controller file to start from (None: the LLM writes the first one)")
    max_tokens: int = Field(1500, ge=32, description="completion budget of one LLM call")
    max_repairs: int = Field(1, ge=0, description="times a rewrite that fails its check is sent back with the error")
    smoke_steps: int = Field(5, ge=1, description="steps of the compile-and-smoke check in the sandbox")
    images: bool = Field(True, description="attach key frames to the prompt for providers that take images")
    images: Literal["auto", "on", "off"] = Field(
        "auto", description="attach the parent's key frames to the rewrite prompt: auto: for the openai "
        "(without a base_url), anthropic and gemini providers; on: always (a server must take images); off")
    limits: ControllerLimits = ControllerLimits()
    camera: CameraConfig = CameraConfig()
    llm: LLMConfig = LLMConfig()

    @property
    def send_images(self) -> bool:
        """Whether rewrite prompts carry key frames (``images``, resolved for the provider)."""
        if self.images != "auto":
            return self.images == "on"
        return takes_images(self.llm) and self.camera.enabled


def parse_aor_config(data: Any) -> AorConfig:
    """Validate a mapping (as loaded from YAML) into an ``AorConfig``."""
    return parse_model(AorConfig, data)


def load_aor_config(path: str | pathlib.Path | None, overrides: Sequence[str] = ()) -> AorConfig:
    """Read (if given), override and validate an AOR configuration."""
    return parse_aor_config(read_yaml(path, overrides) if path is not None else apply_overrides({}, overrides))
