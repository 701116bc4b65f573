"""Faults under a running store (real SQLite files): damage and deletion never go unnoticed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from topicforest.store import Store
from topicforest.store.errors import StoreError


def test_pages_damaged_while_open_are_a_store_error_never_a_raw_sqlite_error(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "memory.sqlite3")
    window = store.open_window()
    for n in range(400):
        window.append("t", "user", f"message {n} about store/db.py, busy_timeout and WAL " * 5)
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the rows now live in the main file
    store.conn.execute("PRAGMA cache_size = 1")  # so damaged pages are read again
    size = os.path.getsize(store.path)
    with store.path.open("r+b") as file:
        for offset in range(2 * 4096, size, 3 * 4096):
            file.seek(offset)
            file.write(bytes(range(256)) * 16)
    for n in range(5):  # the first failure also failed to reload the window (the abort path)
        with pytest.raises(StoreError, match="damaged"):
            window.append("t", "user", f"after {n}")
    store.close()


def test_a_store_deleted_while_open_is_written_again_before_a_commit_is_acknowledged(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "memory.sqlite3")
    window = store.open_window()
    first = window.append("t", "user", "before the deletion")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
    second = window.append("t", "user", "after the deletion")
    assert store.path.exists() and store.path.stat().st_mode & 0o777 == 0o600
    third = window.append("t", "user", "and after that")
    store.close()
    again = Store(tmp_path / "memory.sqlite3")
    assert [m.id for m in again.thread_history("t")] == [first.id, second.id, third.id]
    again.close()
