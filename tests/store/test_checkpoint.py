"""The WAL is copied into the database file by the checkpointer thread, never inside a commit
(where SQLite's automatic checkpoint would fsync twice in a random commit, a chat turn's too)."""

from __future__ import annotations

import time
from pathlib import Path

from topicforest.store import Store

MB = 2**20


def test_commits_never_checkpoint_and_a_flush_has_the_thread_do_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "memory.sqlite3")
    window = store.open_window()
    wal = Path(f"{store.path}-wal")
    with Store.unsynced():  # commits without a flush: nothing wakes the checkpointer
        for n in range(800):  # some 2,000 pages: SQLite alone checkpoints every 1,000
            window.append("t", "user", f"message {n}: " + "a long paste of log lines " * 320)
    assert wal.stat().st_size > 6 * MB  # every frame is still in the WAL
    assert store.path.stat().st_size < 1 * MB  # and none was copied by a commit
    store.sync()  # as after a chat turn: the checkpointer copies the WAL, in its own thread
    deadline = time.monotonic() + 20
    while store.path.stat().st_size < 6 * MB and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.path.stat().st_size >= 6 * MB
    store.close()
    again = Store(tmp_path / "memory.sqlite3")
    assert len(again.thread_history("t")) == 800
    again.close()
