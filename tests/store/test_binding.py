"""StoreBinding: what a workspace memory gets from the store (lease upkeep, idle and exit
flush), on both backends."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from topicforest.engine import WindowConfig
from topicforest.store.binding import IDLE_FLUSH_SECONDS, StoreBinding, workspace_folder

from .conftest import Memory, synthetic


def test_workspace_folder_from_uri(tmp_path: Path) -> None:
    assert workspace_folder(tmp_path.as_uri()) == str(tmp_path)
    assert workspace_folder((tmp_path / "a b").as_uri()) == str(tmp_path / "a b")
    assert workspace_folder("global") is None


def bind(memory: Memory, idle_seconds: float = IDLE_FLUSH_SECONDS) -> StoreBinding:
    """A window's binding on the test's memory (what `StoreBinding.open` makes for a workspace)."""
    store = memory.open()
    return StoreBinding(store, store.open_window(WindowConfig()), idle_seconds)


async def test_lease_moves_and_threads_flush_when_idle_not_on_close(memory: Memory) -> None:
    first, second = bind(memory, idle_seconds=60), bind(memory, idle_seconds=60)
    leases: list[str] = []
    first.start(lambda: None, lambda: leases.append("first"))
    await asyncio.sleep(0.2)
    second.start(lambda: None, lambda: leases.append("second"))
    assert first.maintainer and not second.maintainer and leases == ["first"]

    old = time.time() - 120
    for i, (role, text) in enumerate(synthetic(6)):
        first.window.append("quiet", role, text, timestamp=old + i)
    second.window.append("mine", "user", "What does create_invoice return?")
    second.window.append("mine", "assistant", "create_invoice returns the Invoice row.")
    assert first.flush_idle() == ["quiet"]  # the maintainer flushes threads quiet for too long
    # It saw the other window's fresh thread while flushing, and left it alone.
    assert "quiet" not in first.window.hot and len(first.window.hot["mine"]) == 2

    # A clean exit leaves its threads as they are: a restart shows the same tree. The next
    # window finds "mine" in its hot zone, and flushes it once it has been quiet long enough.
    await second.close()
    await first.close()
    assert [t.thread_id for t in memory.open().threads()] == ["mine", "quiet"]
    reopened = memory.open().open_window()
    assert len(reopened.hot["mine"]) == 2 and len(reopened.forest) == 6


async def test_a_waiting_window_takes_over_when_the_maintainer_leaves(memory: Memory) -> None:
    first, second = bind(memory), bind(memory)
    took_over = asyncio.Event()
    first.start(lambda: None, lambda: None)
    await asyncio.sleep(0.2)
    second.start(lambda: None, took_over.set)
    await first.close()
    await asyncio.wait_for(took_over.wait(), timeout=120)
    assert second.maintainer
    await second.close()
