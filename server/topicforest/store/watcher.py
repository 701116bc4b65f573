"""Noticing other processes' commits: watchfiles on the store's directory, plus a slow poll.

SQLite replaces and truncates its -wal file, so the directory is watched, not the file, and only
events for this database's files count. A commit by another process changes `PRAGMA
data_version`; `Store.refresh` loads the delta and the callback tells the client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from topicforest.store.errors import StoreError
from topicforest.store.store import Store

if TYPE_CHECKING:
    import watchfiles

log = logging.getLogger(__name__)

DEBOUNCE_MS = 150  # upper bound on batching a burst of commits
STEP_MS = 20  # quiet time that ends a batch
POLL_MS = 1000  # the fallback check when the file system sends no events (e.g. NFS)


async def watch_store(
    store: Store,
    on_change: Callable[[], Awaitable[None] | None],
    stop: asyncio.Event | None = None,
) -> None:
    """Until `stop` is set: after each commit by another process, refresh and call `on_change`."""
    import watchfiles  # imported here: it is not needed to answer the first requests

    names = {store.path.name, store.path.name + "-wal"}

    def ours(_change: watchfiles.Change, path: str) -> bool:
        return Path(path).name in names

    async for _changes in watchfiles.awatch(
        store.path.parent,
        watch_filter=ours,
        debounce=DEBOUNCE_MS,
        step=STEP_MS,
        stop_event=stop,
        rust_timeout=POLL_MS,
        yield_on_timeout=True,
        recursive=False,
    ):
        try:
            changed = store.refresh()
        except StoreError as exc:  # a damaged or vanished store: report, keep watching
            log.warning("cannot reload the memory store: %s", exc)
            continue
        if changed:
            result = on_change()
            if result is not None:
                await result
