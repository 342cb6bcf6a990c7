"""The trained policy: loading, tokenising, sampling and per-token log-probs (torch + transformers).

Two models:
- ``smollm2-135m``: the embedded SmolLM2-135M-Instruct GGUF (``csro.llm.models``) loaded into
  transformers through ``gguf`` (dequantised to fp32, ~34 s). The first load converts it once
  into a transformers checkpoint under ``$CSRO_CACHE_DIR/hf/smollm2-135m`` (the gguf
  ``quantization_config`` is dropped first, since ``save_pretrained`` refuses it); later loads
  read that in seconds.
- ``tiny``: a randomly initialised two-layer Llama built from a config in-process, with a
  byte-level tokenizer; no file and no download (tests, smoke runs).

LoRA (peft): one shared base with **one adapter shared by all roles**; the role is in the
prompt (a role-prompted policy). Our choice: a team of a 135M model gets a few rows per
role per step, and one adapter learns from all of them; every row of a mini-batch goes
through one forward pass, which per-role adapters would split by role. ``lora_rank = 0``
trains the full model instead.

Log-probs are taken at ``logits / temperature`` (the distribution the tokens were sampled
from), in fp32 or under bf16 autocast; old and new log-probs must come from the same
precision (bf16 drifts from fp32 by up to ~0.2 nats/token on these machines), so the
trainer computes both here with one setting.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import pathlib
import shutil
import tempfile
import warnings
from typing import Protocol, Sequence

import torch

from csro.errors import ConfigError

MODELS = ("smollm2-135m", "tiny")
Chat = Sequence[tuple[str, str]]  # (role, content) messages


class Tokenizer(Protocol):
    eos_id: int
    pad_id: int

    def chat(self, messages: Chat) -> list[int]:
        """Prompt ids for ``messages``, ending where the assistant's reply starts."""

    def encode(self, text: str) -> list[int]:
        """Plain text (a reply's prefill) as ids, no special tokens."""

    def decode(self, ids: Sequence[int]) -> str: ...


class ByteTokenizer:
    """Bytes 0..255 plus pad, eos and bos; a plain ``<|role|>`` chat layout (the tiny model)."""

    pad_id, eos_id, bos_id = 256, 257, 258
    vocab_size = 259

    def chat(self, messages: Chat) -> list[int]:
        text = "".join(f"<|{role}|>\n{content}\n" for role, content in messages) + "<|assistant|>\n"
        return [self.bos_id, *text.encode("utf-8")]

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


class HFTokenizer:
    """A transformers tokenizer with its own chat template."""

    def __init__(self, tok):
        self.tok = tok
        self.eos_id = int(tok.eos_token_id)
        self.pad_id = int(tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)

    def chat(self, messages: Chat) -> list[int]:
        text = self.tok.apply_chat_template([{"role": r, "content": c} for r, c in messages],
                                            add_generation_prompt=True, tokenize=False)
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"]) if text else []

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=True)


@dataclasses.dataclass
class Policy:
    """A causal LM (possibly LoRA-wrapped) with its tokenizer and sampling/precision settings."""

    model: torch.nn.Module
    tokenizer: Tokenizer
    name: str
    device: torch.device
    temperature: float = 1.0
    bf16: bool = False

    def precision(self):
        """The autocast context both old and new log-probs are computed under."""
        if not self.bf16:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def load_trainable_state(self, state: dict[str, torch.Tensor]) -> None:
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for n, value in state.items():
                params[n].copy_(value)


def hf_cache_dir() -> pathlib.Path:
    """``$CSRO_CACHE_DIR/hf``, default ``~/.cache/csro/hf`` (beside the GGUF cache)."""
    root = os.environ.get("CSRO_CACHE_DIR")
    return (pathlib.Path(root) if root else pathlib.Path.home() / ".cache" / "csro") / "hf"


def tiny_model(seed: int, vocab_size: int = ByteTokenizer.vocab_size) -> torch.nn.Module:
    """A randomly initialised two-layer Llama (~60k parameters), built from a config in-process."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
                         pad_token_id=ByteTokenizer.pad_id, eos_token_id=ByteTokenizer.eos_id,
                         bos_token_id=ByteTokenizer.bos_id, tie_word_embeddings=True)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


@contextlib.contextmanager
def _gguf_parsed_once():
    """transformers' GGUF loader with gguf's reader and tensor-name map made once per argument.

    Loading a GGUF, transformers parses the whole file three times (for the tokenizer, the
    config and the weights; the 49,152-token vocabulary is most of each parse) and builds
    gguf's tensor-name map once per submodule, about 400 times. Both are pure functions of
    their arguments and the file, which does not change while it is read, so answering repeats
    from a cache gives the same checkpoint: the same weights, config and tokenizer files, in
    17.8 s of CPU instead of 34.7 s here (2026-12-07; docs/train.md).
    """
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader, gguf.get_tensor_name_map = functools.cache(reader), functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def smollm2_checkpoint() -> pathlib.Path:
    """The transformers checkpoint of SmolLM2-135M-Instruct, converted from its GGUF on first use."""
    target = hf_cache_dir() / "smollm2-135m"
    if (target / "config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from csro.llm.models import ensure_model

    gguf = ensure_model("smollm2-135m")
    with _gguf_parsed_once():
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    clean = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    clean.load_state_dict(loaded.state_dict())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=".smollm2-135m.", dir=target.parent))
    try:
        clean.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def load_policy(name: str, *, seed: int, lora_rank: int = 8, device: str = "auto", temperature: float = 1.0,
                bf16: bool = False) -> Policy:
    """The policy ``name`` (``smollm2-135m`` or ``tiny``), LoRA-wrapped when ``lora_rank > 0``."""
    if name not in MODELS:
        raise ConfigError(f"model: unknown model {name!r}; known: {', '.join(MODELS)}")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Loading weights" bars would interleave with the step lines
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)  # peft
    dev = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else
                       ("cpu" if device == "auto" else device))
    if name == "tiny":
        model, tokenizer = tiny_model(seed), ByteTokenizer()
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = smollm2_checkpoint()
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(path))
    if lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(seed)
        model = get_peft_model(model, LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, lora_dropout=0.0,
                                                 target_modules=["q_proj", "v_proj"]))
    model.to(dev).eval()  # no dropout anywhere: old and new log-probs see the same network
    return Policy(model, tokenizer, name, dev, temperature, bf16)


@dataclasses.dataclass(frozen=True)
class Sample:
    """One sampled completion: its token ids (ending at eos when one was produced) and text."""

    completion_ids: tuple[int, ...]
    text: str


def generate(policy: Policy, prompts: Sequence[Sequence[int]], max_new_tokens: int, seed: int) -> list[Sample]:
    """Sample one completion per prompt (batched, left-padded), seeded."""
    if not prompts:
        return []
    tok = policy.tokenizer
    ids, attn = _left_pad(prompts, tok.pad_id, policy.device)
    torch.manual_seed(seed)
    with torch.no_grad(), policy.precision():
        out = policy.model.generate(input_ids=ids, attention_mask=attn, do_sample=True,
                                    temperature=policy.temperature, top_k=0, top_p=1.0,
                                    max_new_tokens=max_new_tokens, pad_token_id=tok.pad_id,
                                    eos_token_id=tok.eos_id)
    samples = []
    for row in out[:, ids.shape[1]:].tolist():
        if tok.eos_id in row:
            row = row[:row.index(tok.eos_id) + 1]
        samples.append(Sample(tuple(row), tok.decode(row)))
    return samples


def _left_pad(prompts: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        if p:
            ids[i, width - len(p):] = torch.tensor(list(p), dtype=torch.long)
            attn[i, width - len(p):] = 1
    return ids.to(device), attn.to(device)


def token_logprobs(policy: Policy, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]]
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """``log q(a_u | o_u)`` of every completion token and its padding mask, ``[rows, max_completion]``.

    Prompts are left-padded and completions right-padded, so every completion starts at the
    same position and only the completion positions' logits are computed (``logits_to_keep``).
    Gradients flow when called outside ``torch.no_grad``.
    """
    width = max(len(c) for c in completions)
    if width == 0:
        zeros = torch.zeros((len(completions), 0), device=policy.device)
        return zeros, zeros
    p_ids, p_attn = _left_pad(prompts, policy.tokenizer.pad_id, policy.device)
    c_ids = torch.full((len(completions), width), policy.tokenizer.pad_id, dtype=torch.long)
    c_mask = torch.zeros((len(completions), width))
    for i, c in enumerate(completions):
        c_ids[i, :len(c)] = torch.tensor(list(c), dtype=torch.long)
        c_mask[i, :len(c)] = 1.0
    c_ids, c_mask = c_ids.to(policy.device), c_mask.to(policy.device)
    ids = torch.cat([p_ids, c_ids], dim=1)
    attn = torch.cat([p_attn, c_mask.long()], dim=1)
    positions = (attn.cumsum(-1) - 1).clamp(min=0)
    with policy.precision():
        logits = policy.model(input_ids=ids, attention_mask=attn, position_ids=positions,
                              logits_to_keep=width + 1).logits[:, :-1]
    logp = torch.log_softmax(logits.float() / policy.temperature, dim=-1)
    return logp.gather(-1, c_ids[..., None]).squeeze(-1) * c_mask, c_mask

