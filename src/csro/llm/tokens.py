"""Token counts without a tokenizer: the documented approximation used where a provider's
tokenizer is not available offline (the hosted providers', the ``files`` provider's).

``approx_tokens`` is one token per ``CHARS_PER_TOKEN`` characters, rounded up. The ratio was
measured with the embedded Qwen2.5-Coder tokenizer (a BPE vocabulary of the GPT-4 kind) on
csro's own texts: RRPS oracle prompts 4.1-4.2 characters per token, hand-written policies
3.4-4.2, csro's game modules 3.6-4.1, 4.0 over all of them (docs/cost.md). Other
tokenizers differ by some 10-20% on code; ``csro run --estimate`` says which counter it used.
"""

from __future__ import annotations

import math

from csro.llm._types import LLMRequest

CHARS_PER_TOKEN = 4.0
MESSAGE_OVERHEAD = 4  # role markers and separators per chat message


def approx_tokens(text: str) -> int:
    """The approximate token count of ``text``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def approx_prompt_tokens(request: LLMRequest) -> int:
    """The approximate prompt tokens of ``request``: its messages and prefill."""
    return (sum(approx_tokens(m.content) + MESSAGE_OVERHEAD for m in request.messages)
            + approx_tokens(request.prefill))
