"""StoreBinding: what a workspace memory gets from the store (lease upkeep, idle and exit flush)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from topicforest.engine import WindowConfig
from topicforest.store import Store, store_path
from topicforest.store.binding import StoreBinding, workspace_folder

from .conftest import synthetic


def test_workspace_folder_from_uri(tmp_path: Path) -> None:
    assert workspace_folder(tmp_path.as_uri()) == str(tmp_path)
    assert workspace_folder((tmp_path / "a b").as_uri()) == str(tmp_path / "a b")
    assert workspace_folder("global") is None


async def test_lease_moves_and_threads_flush_when_idle_and_on_close(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    uri, memory = folder.as_uri(), str(tmp_path / "mem")
    first = StoreBinding.open(uri, memory, WindowConfig(), idle_seconds=60)
    second = StoreBinding.open(uri, memory, WindowConfig(), idle_seconds=60)
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

    await second.close(["mine"])  # a clean exit flushes this window's own threads
    await first.close([])
    assert [t.thread_id for t in Store(store_path(folder, memory)).threads()] == ["mine", "quiet"]
    reopened = Store(store_path(folder, memory)).open_window()
    assert not reopened.hot and len(reopened.forest) == 8


async def test_a_waiting_window_takes_over_when_the_maintainer_leaves(tmp_path: Path) -> None:
    uri, memory = (tmp_path / "ws").as_uri(), str(tmp_path / "mem")
    first = StoreBinding.open(uri, memory, WindowConfig())
    second = StoreBinding.open(uri, memory, WindowConfig())
    took_over = asyncio.Event()
    first.start(lambda: None, lambda: None)
    await asyncio.sleep(0.2)
    second.start(lambda: None, took_over.set)
    await first.close([])
    await asyncio.wait_for(took_over.wait(), timeout=3)
    assert second.maintainer
    await second.close([])
