"""Opening a workspace's store again while its database is unreachable.

A team memory whose PostgreSQL is down (or not reachable yet) when the window opens is tried
again in the background, `FIRST_SECONDS` after the failure and then twice as long each time, at
most `MAX_SECONDS` apart, until it opens; meanwhile the memory refuses every change with the
store's error (nothing is acknowledged that was not committed). An error that waiting cannot
mend (a memory that is not ours, a newer schema) ends the retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator

from topicforest.store.binding import StoreBinding
from topicforest.store.errors import StoreError, StoreUnreachable

log = logging.getLogger(__name__)

FIRST_SECONDS = 1.0
MAX_SECONDS = 30.0


def delays(first: float = FIRST_SECONDS, most: float = MAX_SECONDS) -> Iterator[float]:
    """first, 2 × first, 4 × first, … never more than `most`."""
    delay = first
    while True:
        yield min(delay, most)
        delay = min(delay * 2, most)


class Reopen:
    """One background task: `attempt` (in a worker thread: connecting may take seconds) until
    it returns a binding, handed to `opened` on the loop; every failure goes to `failed`."""

    def __init__(
        self,
        key: str,
        attempt: Callable[[], StoreBinding],
        opened: Callable[[StoreBinding], None],
        failed: Callable[[StoreError], None],
    ) -> None:
        self.key = key
        self.attempt = attempt
        self.opened = opened
        self.failed = failed
        self.due = False  # set when the store was unreachable; `start` begins only then
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin retrying if due (needs a running loop); idempotent."""
        if self.due and self._task is None and not self._stop.is_set():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"topicforest-reopen:{self.key}"
            )

    async def close(self) -> None:
        """Stop retrying; an attempt under way finishes (bounded by the connect timeout) and
        what it opened is closed."""
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        for delay in delays():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            if self._stop.is_set():
                return
            try:
                binding = await asyncio.to_thread(self.attempt)
            except StoreUnreachable as exc:
                self.failed(exc)
                continue
            except StoreError as exc:
                self.failed(exc)
                return
            except Exception:
                log.exception("reopening the memory store of %s failed", self.key)
                return
            if self._stop.is_set():  # closed while connecting
                await binding.close()
                return
            self.due = False
            self.opened(binding)
            return
