"""A ContextWindow on the store: every change it makes is one store transaction (see
`topicforest.store.store`)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from topicforest.engine.config import WindowConfig
from topicforest.engine.messages import Message
from topicforest.engine.tokens import TokenCounter, estimate_tokens
from topicforest.engine.window import ContextWindow

if TYPE_CHECKING:
    from topicforest.store.store import Store

T = TypeVar("T")
P = ParamSpec("P")


def _transaction(
    verb: Callable[Concatenate[ContextWindow, P], T],
) -> Callable[Concatenate[StoredWindow, P], T]:
    """`verb` of a `StoredWindow`, in one store transaction (see the module docstring)."""

    @functools.wraps(verb)
    def run(window: StoredWindow, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with window.store.transaction():
            return verb(window, *args, **kwargs)

    return run


class StoredWindow(ContextWindow):
    """A ContextWindow whose every change is one store transaction (see the module docstring).

    Reads (topics, render, search) use memory; `Store.refresh` brings in other processes' work.
    """

    def __init__(
        self,
        store: Store,
        config: WindowConfig | None = None,
        *,
        count: TokenCounter = estimate_tokens,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(config, log=store.log, count=count, clock=clock)
        self.store = store

    def append(
        self,
        thread_id: str,
        role: str,
        content: object,
        *,
        timestamp: float | None = None,
        cancelled: bool = False,
    ) -> Message:
        """Store a message; it is committed to disk before this returns (an append: see
        `Store.appending`). ForeignThread if another person owns the thread."""
        self.store.check_owner(thread_id)
        with self.store.appending():
            return super().append(
                thread_id, role, content, timestamp=timestamp, cancelled=cancelled
            )

    def push_hot(self, message: Message) -> None:
        super().push_hot(message)
        self.store.log.keep(message)

    def forget(self, message_ids: Iterable[int]) -> set[int]:
        """Delete messages in one transaction; other windows reload whole on seeing it."""
        with self.store.transaction():
            changed = super().forget(message_ids)
            self.store.count_deletion()
            return changed

    # Each engine verb that changes persisted state runs as one transaction.
    graduate = _transaction(ContextWindow.graduate)
    flush_thread = _transaction(ContextWindow.flush_thread)
    drop = _transaction(ContextWindow.drop)
    restore = _transaction(ContextWindow.restore)
    pin = _transaction(ContextWindow.pin)
    expand = _transaction(ContextWindow.expand)
    collapse = _transaction(ContextWindow.collapse)
    summary_jobs = _transaction(ContextWindow.summary_jobs)  # a merge may renew a version
    apply_summary = _transaction(ContextWindow.apply_summary)
    set_fallback_summary = _transaction(ContextWindow.set_fallback_summary)
    refine = _transaction(ContextWindow.refine)
