"""The one exception type the store raises for anything the user or the disk did wrong."""

from __future__ import annotations


class StoreError(Exception):
    """The memory database cannot be opened, read or written; nothing was partially written."""


class ForeignThread(Exception):
    """A message, rename or delete for a thread another person owns (threads are per person)."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"thread {thread_id!r} belongs to another person: only its owner can write to, "
            "rename or delete it"
        )
        self.thread_id = thread_id


class StoreUnreachable(StoreError):
    """The memory's database cannot be reached now (its server down, a network cut): unlike a
    damaged or foreign memory, trying again later may succeed."""
