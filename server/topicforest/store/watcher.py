"""Noticing other processes' commits, whatever the backend, and telling the window.

The backend says when something may have changed (`Backend.changes`: a file event or poll for
SQLite, a LISTEN/NOTIFY message for PostgreSQL); `Store.refresh` loads the delta, if there is
one, and `on_change` tells the client.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from topicforest.store.errors import StoreError
from topicforest.store.store import Store

log = logging.getLogger(__name__)

# Others' commits are loaded at most this often. Each load costs every window a reload and an
# upkeep round; four windows chatting at once commit some 150 times a second, and loading them
# 50 times a second kept the CPUs busy that the turns needed. A drop still reaches the others
# well within the 300 ms the team target allows.
RELOAD_SECONDS = 0.15

# Awaited before loading others' commits (the workspace's send gate: see `watch_store`).
Quiet = Callable[[], Awaitable[object]]


async def watch_store(
    store: Store,
    on_change: Callable[[], Awaitable[None] | None],
    stop: asyncio.Event | None = None,
    quiet: Quiet | None = None,
) -> None:
    """Until `stop` is set: after each commit by another process, refresh and call `on_change`.

    `quiet` is awaited before each refresh: the workspace's send gate, so that loading a busy
    team's commits (milliseconds at 100,000 messages) never lands inside a chat turn between
    its receipt and its request leaving. Loads are `RELOAD_SECONDS` apart at least: what
    arrives meanwhile is loaded together."""
    loaded = float("-inf")
    async for _ in store.backend.changes(stop):
        await asyncio.sleep(loaded + RELOAD_SECONDS - time.monotonic())
        if quiet is not None:
            await quiet()
        loaded = time.monotonic()
        try:
            changed = store.refresh()
        except StoreError as exc:  # a damaged, vanished or unreachable store: report, go on
            log.warning("cannot reload the memory store: %s", exc)
            continue
        if changed:
            result = on_change()
            if result is not None:
                await result
