"""What a workspace memory needs from the store, in one place (used by `WorkspaceMemory`).

`StoreBinding` opens the workspace's store and its window, and runs two background tasks:
the watcher (another window committed → reload → tell our client) and the upkeep loop (poll the
maintenance lease; when held, flush threads idle for `idle_seconds`). `close` lets the lease
go. It leaves this process's threads' hot zones as they are: flushing them at exit reshaped the
tree (new topics, new summaries and titles) with no new message, so a restart showed a different
tree; a thread left alone moves into the forest once it has been idle for `idle_seconds`, as it
would have had the window stayed open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from urllib.parse import unquote, urlparse

from topicforest.engine.config import WindowConfig
from topicforest.engine.messages import Message
from topicforest.engine.tokens import TokenCounter, estimate_tokens
from topicforest.store.errors import StoreError
from topicforest.store.readonly import open_readonly
from topicforest.store.store import Store, ThreadRow
from topicforest.store.stored_window import StoredWindow
from topicforest.store.watcher import Quiet, watch_store

log = logging.getLogger(__name__)

LEASE_POLL_SECONDS = 1.0  # how soon a waiting window notices that the maintainer died
IDLE_FLUSH_SECONDS = 600.0  # a thread quiet this long moves its hot zone into the forest


def workspace_folder(uri: str) -> str | None:
    """The local folder of a `file:` workspace URI; None for the global memory."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


class StoreBinding:
    def __init__(self, store: Store, window: StoredWindow, idle_seconds: float) -> None:
        self.store = store
        self.window = window
        self.idle_seconds = idle_seconds
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()

    @classmethod
    def open(
        cls,
        workspace_uri: str,
        store_dir: str | None,
        config: WindowConfig,
        *,
        count: TokenCounter = estimate_tokens,
        idle_seconds: float = IDLE_FLUSH_SECONDS,
        url: str | None = None,
        user: str | None = None,
        readonly: bool = False,
    ) -> StoreBinding:
        """Open (or create) the workspace's store (with `url`, its team memory in PostgreSQL);
        raises StoreError with a clear message. `readonly`: only an existing store, never
        written, its lease never taken (`store.readonly`)."""
        folder = workspace_folder(workspace_uri)
        store = (
            open_readonly(folder, store_dir, url=url, user=user)
            if readonly
            else Store.for_workspace(folder, store_dir, url=url, user=user)
        )
        try:
            window = store.open_window(config, count=count)
        except BaseException:
            store.close()
            raise
        return cls(store, window, idle_seconds)

    @property
    def maintainer(self) -> bool:
        """Whether this process does graduation and summaries (holds the lease)."""
        return self.store.lease.held

    def start(
        self,
        on_external: Callable[[], None],
        on_lease: Callable[[], None],
        quiet: Quiet | None = None,
    ) -> None:
        """Start watching (needs a running loop). `on_external`: others changed the memory;
        `on_lease`: this process just became the maintainer, or has upkeep to do; `quiet`:
        awaited before loading others' commits (see `watch_store`). A read-only store is
        only watched: it never takes the lease."""
        loop = asyncio.get_running_loop()
        watch = watch_store(self.store, on_external, self._stop, quiet)
        self._tasks = [loop.create_task(watch, name="store-watch")]
        if not self.readonly:
            self._tasks.append(loop.create_task(self._upkeep(on_lease), name="store-upkeep"))

    @property
    def readonly(self) -> bool:
        return self.store.backend.readonly

    async def _upkeep(self, on_lease: Callable[[], None]) -> None:
        lease = self.store.lease
        while not self._stop.is_set():
            try:
                if self.maintainer and not await asyncio.to_thread(lease.alive):
                    log.warning("lost the maintenance lease of %s", self.store.where)
                if not self.maintainer and await asyncio.to_thread(lease.try_acquire):
                    log.info("this window now maintains %s", self.store.where)
                    self.store.refresh()
                    on_lease()  # resume whatever the previous maintainer left dirty
                if self.maintainer and self.flush_idle():
                    on_lease()
            except StoreError as exc:
                log.warning("store upkeep: %s", exc)
            except Exception:
                log.exception("store upkeep failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), LEASE_POLL_SECONDS)

    def flush_idle(self) -> list[str]:
        """Flush threads with no message for `idle_seconds`; returns their ids."""
        return self.window.flush_idle(self.window.clock(), self.idle_seconds)

    # -- queries served from disk ------------------------------------------------------------
    def threads(self) -> list[ThreadRow]:
        return self.store.threads()

    def history(self, thread_id: str, limit: int | None = None) -> list[Message]:
        return self.store.thread_history(thread_id, limit)

    async def close(self) -> None:
        """Stop the tasks, release the lease (hot zones stay: see the module's doc)."""
        self._stop.set()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.store.close()
