"""Token counts without a tokenizer: the documented approximation used where a provider's
tokenizer is not available offline (the hosted providers', the ``files`` provider's).

``approx_tokens`` is one token per ``CHARS_PER_TOKEN`` characters, rounded up. The ratio was
measured with the embedded Qwen2.5-Coder tokenizer on csro's own prompts and policies
(rules, API, Python code): see docs/cost.md. Hosted tokenizers differ by some 10-20% on
code; ``csro run --estimate`` says which counter it used.
"""

from __future__ import annotations

import math

from csro.llm._types import LLMRequest

CHARS_PER_TOKEN = 3.6
MESSAGE_OVERHEAD = 4  # role markers and separators per chat message


def approx_tokens(text: str) -> int:
    """The approximate token count of ``text``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def approx_prompt_tokens(request: LLMRequest) -> int:
    """The approximate prompt tokens of ``request``: its messages and prefill."""
    return (sum(approx_tokens(m.content) + MESSAGE_OVERHEAD for m in request.messages)
            + approx_tokens(request.prefill))
