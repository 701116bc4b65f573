"""Tunable numbers of the engine, with the design's defaults."""

from __future__ import annotations

from dataclasses import dataclass

MIN_AUTO_BUDGET = 1024
MAX_AUTO_BUDGET = 8192


def auto_history_budget(max_input_tokens: int | None) -> int:
    """aider's rule: a sixteenth of the model's input window, clamped to [1024, 8192]."""
    if not max_input_tokens:
        return 2048
    return max(MIN_AUTO_BUDGET, min(MAX_AUTO_BUDGET, max_input_tokens // 16))


@dataclass(frozen=True)
class WindowConfig:
    history_budget: int = 2048
    merge_threshold: float = 0.15
    max_topics: int = 16
    hot_share: float = 0.5  # share of the budget each thread keeps verbatim
    max_message_chars: int = 200_000
    max_vocabulary: int = 50_000
    summary_batch_tokens: int = 1024  # unsummarized tokens a topic gathers before a summary call
    workspace_root: str | None = None  # absolute paths under this folder are named relative to it

    def __post_init__(self) -> None:
        if self.history_budget < 64:
            raise ValueError("history_budget must be at least 64 tokens")
        if not 0.0 <= self.merge_threshold <= 1.0:
            raise ValueError("merge_threshold must be between 0 and 1")
        if self.max_topics < 1:
            raise ValueError("max_topics must be at least 1")
        if self.summary_batch_tokens < 0:
            raise ValueError("summary_batch_tokens must not be negative")
        if not 0.1 <= self.hot_share <= 0.9:
            raise ValueError("hot_share must be between 0.1 and 0.9")

    @property
    def hot_budget(self) -> int:
        return int(self.history_budget * self.hot_share)
