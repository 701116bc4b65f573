"""Token counting: a fast conservative estimate on the hot path, exact counts when available.

The estimate is deliberately generous (about 3 characters per token for ASCII, and for other text
one token per UTF-8 byte, which a byte-level BPE can never exceed), so on ordinary chat it counts
more than a real tokenizer; dense code can still beat it, so a window given the model's exact
counter verifies every render with it.
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
    ascii_chars = len(text.encode("ascii", "ignore"))  # counted in C: this runs on every render
    other_bytes = len(text.encode("utf-8", "surrogatepass")) - ascii_chars
    return (ascii_chars + 2) // 3 + other_bytes + 1


def litellm_counter(model: str) -> Callable[[str], int]:
    """Exact count for `model` through litellm's tokenizers (imported lazily, works offline)."""
    litellm = load_litellm()

    def count(text: str) -> int:
        return int(litellm.token_counter(model=model, text=text))

    return count


def truncate(text: str, max_tokens: int, count: TokenCounter) -> str:
    """Longest prefix of `text` (plus an ellipsis) within `max_tokens`."""
    if count(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid] + " …") <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + " …" if lo else ""
