"""What the server hears from a workspace: topicsChanged, threadsChanged and progress.

`Events` calls the listener (the server's notifier, a test's recorder, or nobody), never lets a
listener's failure reach the caller, and counts changes: every announced topic change may alter
a render, so `version` keys the render cache.
"""

from __future__ import annotations

import logging
from typing import Literal, Protocol

log = logging.getLogger(__name__)
ProgressStage = Literal["begin", "report", "end"]


class MemoryListener(Protocol):
    """What the server hears from a memory (it turns these into notifications); `key` is the
    workspace folder URI, or "global"."""

    def topics_changed(self, key: str, reason: str, ids: list[int] | None) -> None:
        """Topic state changed (`reason`: graduated, summarized, dropped, ...)."""

    def summarizing(self, key: str, stage: ProgressStage, message: str, percentage: int) -> None:
        """Background summarizing started, advanced or ended."""

    def threads_changed(self, key: str, thread_id: str | None, appended: list[str]) -> None:
        """A thread was renamed or deleted (None: another window changed threads; `appended`:
        the threads it added messages to)."""


class Events:
    def __init__(self, key: str, listener: MemoryListener | None = None) -> None:
        self.key = key
        self.listener = listener
        self.version = 0  # bumped by every change that can alter a render

    def touch(self) -> None:
        """Something a render reads changed, without a topic event (a message, settings)."""
        self.version += 1

    def topics_changed(self, reason: str, ids: list[int] | None) -> None:
        self.version += 1
        if self.listener is not None:
            try:
                self.listener.topics_changed(self.key, reason, ids)
            except Exception:
                log.exception("topicsChanged listener failed")

    def threads_changed(self, thread_id: str | None, appended: list[str] | None = None) -> None:
        if self.listener is not None:
            try:
                self.listener.threads_changed(self.key, thread_id, appended or [])
            except Exception:
                log.exception("threadsChanged listener failed")

    def progress(self, stage: ProgressStage, message: str, percentage: int) -> None:
        if self.listener is not None:
            try:
                self.listener.summarizing(self.key, stage, message, percentage)
            except Exception:
                log.exception("progress listener failed")
