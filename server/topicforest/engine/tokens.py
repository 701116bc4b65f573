"""Token counting: a fast conservative estimate on the hot path, exact counts when available.

The estimate is deliberately pessimistic (about 3 characters per token for ASCII, one token per
non-ASCII character) so that packing by estimate stays under the budget by the exact count; the
window still verifies its final render with the exact counter when one is configured.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from topicforest.engine.llm import load_litellm


class TokenCounter(Protocol):
    def __call__(self, text: str) -> int: ...


def estimate_tokens(text: str) -> int:
    if text.isascii():
        return (len(text) + 2) // 3 + 1
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return (ascii_chars + 2) // 3 + (len(text) - ascii_chars) + 1


def litellm_counter(model: str) -> Callable[[str], int]:
    """Exact count for `model` through litellm's tokenizers (imported lazily, works offline)."""
    litellm = load_litellm()

    def count(text: str) -> int:
        return int(litellm.token_counter(model=model, text=text))

    return count
