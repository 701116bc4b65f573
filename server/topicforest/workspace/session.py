"""The store session of a workspace: its window, messages, threads and durability.

A stored memory lives in the workspace's SQLite store (`StoredSession`, over the store's
`StoreBinding`); an unstored one (tests, benchmarks, a store that failed to open) keeps all of
it in this process (`NullSession`). Both answer the same questions, so the memory never asks
which one it has.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from topicforest.attachments import AttachmentLog, InMemoryAttachments
from topicforest.engine import ContextWindow, Message
from topicforest.engine.render import sanitize_line
from topicforest.store.binding import StoreBinding
from topicforest.store.errors import ForeignThread
from topicforest.store.watcher import Quiet

THREAD_TITLE_CHARS = 200  # a title the user gave; a first message makes one of at most 80
FIRST_MESSAGE_TITLE_CHARS = 80


def thread_title(text: str) -> str:
    return sanitize_line(text, THREAD_TITLE_CHARS)


@dataclass(frozen=True)
class ThreadInfo:
    thread_id: str
    message_count: int
    last_time: float
    title: str


class StoreSession(Protocol):
    window: ContextWindow
    attachments: AttachmentLog

    @property
    def maintainer(self) -> bool:
        """Whether this process graduates and summarizes (a stored one: holds the lease)."""

    @property
    def own_threads(self) -> list[str]:
        """Threads this process wrote to."""

    def note(self, message: Message) -> None:
        """`message` was appended by this process."""

    def transaction(self) -> AbstractContextManager[object]:
        """One store transaction for several changes."""

    def unsynced(self) -> AbstractContextManager[None]:
        """Commits inside return before they are on disk; `sync` puts them there."""

    def appending(self) -> AbstractContextManager[object]:
        """One append (a question and its attachments) that waits for no other writer."""

    async def sync(self) -> None:
        """Put this process's commits on disk (off the loop: an fsync can take milliseconds)."""

    def start(
        self, on_external: Callable[[], None], on_lease: Callable[[], None], quiet: Quiet
    ) -> None:
        """Begin watching for other windows' commits (loaded once `quiet` returns) and for the
        maintenance lease."""

    async def close(self) -> None:
        """Flush this process's threads into the forest and let the store go."""

    def refresh(self) -> bool:
        """Load what other windows committed; whether anything changed."""

    def take_threads_changed(self) -> list[str] | None:
        """None if no other window changed threads since the last call, else the threads
        that gained messages meanwhile (none, when threads were only renamed or deleted)."""

    def threads(self) -> list[ThreadInfo]: ...

    def history(self, thread_id: str, limit: int | None) -> list[Message]: ...

    def thread_message_ids(self, thread_id: str) -> list[int]: ...

    def last_user_message(self, thread_id: str) -> int | None: ...

    def check_owner(self, thread_id: str) -> None:
        """Raise ForeignThread if the thread is another person's (threads are per person)."""

    def rename_thread(self, thread_id: str, title: str) -> ThreadInfo | None:
        """The renamed thread, or None if there is no such thread."""

    def forget_thread(self, thread_id: str) -> None:
        """The thread's messages were deleted (the window and attachments already forgot)."""


class NullSession:
    """Everything in this process: nothing to sync, no other windows, always the maintainer."""

    maintainer = True

    def __init__(self, window: ContextWindow) -> None:
        self.window = window
        self.attachments: AttachmentLog = InMemoryAttachments()
        self._threads: dict[str, list[int]] = {}
        self._titles: dict[str, str] = {}  # renames

    @property
    def own_threads(self) -> list[str]:
        return list(self._threads)

    def note(self, message: Message) -> None:
        self._threads.setdefault(message.thread_id, []).append(message.id)

    def transaction(self) -> AbstractContextManager[object]:
        return contextlib.nullcontext()

    def unsynced(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def appending(self) -> AbstractContextManager[object]:
        return contextlib.nullcontext()

    async def sync(self) -> None:
        return None

    def start(
        self, on_external: Callable[[], None], on_lease: Callable[[], None], quiet: Quiet
    ) -> None:
        return None

    async def close(self) -> None:
        return None

    def refresh(self) -> bool:
        return False

    def take_threads_changed(self) -> list[str] | None:
        return None

    def threads(self) -> list[ThreadInfo]:
        infos = [self._info(tid, ids) for tid, ids in self._threads.items() if ids]
        return sorted(infos, key=lambda t: -t.last_time)

    def _info(self, thread_id: str, ids: list[int]) -> ThreadInfo:
        first, last = self.window.log.get(ids[0]), self.window.log.get(ids[-1])
        title = self._titles.get(thread_id) or sanitize_line(
            first.content, FIRST_MESSAGE_TITLE_CHARS
        )
        return ThreadInfo(thread_id, len(ids), last.timestamp, title)

    def history(self, thread_id: str, limit: int | None) -> list[Message]:
        ids = self._threads.get(thread_id, [])
        return self.window.log.get_many(ids[-limit:] if limit else ids)

    def thread_message_ids(self, thread_id: str) -> list[int]:
        return list(self._threads.get(thread_id, []))

    def last_user_message(self, thread_id: str) -> int | None:
        ids = self._threads.get(thread_id, [])
        users = (m.id for m in self.window.log.get_many(ids[::-1]) if m.role == "user")
        return next(users, None)

    def check_owner(self, thread_id: str) -> None:
        return None  # one process, one person

    def rename_thread(self, thread_id: str, title: str) -> ThreadInfo | None:
        ids = self._threads.get(thread_id)
        if not ids:
            return None
        self._titles[thread_id] = thread_title(title)
        return self._info(thread_id, ids)

    def forget_thread(self, thread_id: str) -> None:
        self._threads.pop(thread_id, None)
        self._titles.pop(thread_id, None)


class StoredSession:
    """The workspace's SQLite store (docs/storage.md), shared with other windows."""

    def __init__(self, binding: StoreBinding) -> None:
        self.binding = binding
        self.window: ContextWindow = binding.window
        self.attachments: AttachmentLog = binding.store.attachments
        self._own: dict[str, None] = {}  # ordered set
        binding.store.mirror.threads_changed = False  # the client lists threads anyway

    @property
    def maintainer(self) -> bool:
        return self.binding.maintainer

    @property
    def own_threads(self) -> list[str]:
        return list(self._own)

    def note(self, message: Message) -> None:
        self._own[message.thread_id] = None

    def transaction(self) -> AbstractContextManager[object]:
        return self.binding.store.transaction()

    def unsynced(self) -> AbstractContextManager[None]:
        return self.binding.store.unsynced()

    def appending(self) -> AbstractContextManager[object]:
        return self.binding.store.appending()

    async def sync(self) -> None:
        if self.binding.store.unsynced_commits:  # no idle hop to a thread
            await asyncio.to_thread(self.binding.store.sync)

    def start(
        self, on_external: Callable[[], None], on_lease: Callable[[], None], quiet: Quiet
    ) -> None:
        self.binding.start(on_external, on_lease, quiet)

    async def close(self) -> None:
        await self.binding.close()

    def refresh(self) -> bool:
        return self.binding.store.refresh()

    def take_threads_changed(self) -> list[str] | None:
        mirror = self.binding.store.mirror
        changed, mirror.threads_changed = mirror.threads_changed, False
        appended, mirror.appended_to = sorted(mirror.appended_to), set()
        return [t for t in appended if self._mine(t)] if changed else None

    def _mine(self, thread_id: str) -> bool:
        """Whether this person may see the thread (in a team memory, another's is private)."""
        try:
            self.binding.store.check_owner(thread_id)
        except ForeignThread:
            return False
        return True

    def threads(self) -> list[ThreadInfo]:
        return [
            ThreadInfo(t.thread_id, t.message_count, t.last_time, thread_title(t.title))
            for t in self.binding.threads()
        ]

    def history(self, thread_id: str, limit: int | None) -> list[Message]:
        return self.binding.history(thread_id, limit)

    def thread_message_ids(self, thread_id: str) -> list[int]:
        return self.binding.store.thread_message_ids(thread_id)

    def last_user_message(self, thread_id: str) -> int | None:
        return self.binding.store.last_user_message(thread_id)

    def check_owner(self, thread_id: str) -> None:
        self.binding.store.check_owner(thread_id)

    def rename_thread(self, thread_id: str, title: str) -> ThreadInfo | None:
        row = self.binding.store.rename_thread(thread_id, thread_title(title))
        if row is None:
            return None
        return ThreadInfo(row.thread_id, row.message_count, row.last_time, row.title)

    def forget_thread(self, thread_id: str) -> None:
        self._own.pop(thread_id, None)
