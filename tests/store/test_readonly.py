"""A memory opened read-only (store/readonly.py, for `topicforest mcp`): it reads what the
writers committed, and neither it nor its database lets anything be written."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from topicforest.store import Store, StoreError, store_path
from topicforest.store.readonly import open_readonly


def written(store: Store) -> None:
    window = store.open_window()
    for n in range(6):
        window.append("t1", "user", f"In store/db.py set busy_timeout={n}000 for the writers?")
        window.append("t1", "assistant", f"Yes: busy_timeout={n}000 next to journal_mode=WAL.")
    window.flush_thread("t1")  # into topics


def test_a_sqlite_memory_opens_read_only(tmp_path: Path) -> None:
    writer = Store.for_workspace(tmp_path, tmp_path / ".store")
    written(writer)
    reader = open_readonly(tmp_path, tmp_path / ".store")
    window = reader.open_window()
    assert [t.message_count for t in window.topics()] == [
        t.message_count for t in writer.window.topics()
    ]
    topic = window.topics()[0].id
    with pytest.raises(StoreError, match="read-only"):
        window.drop(topic)
    assert not window.topic(topic).dropped  # nothing changed in memory either
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.sqlite.execute("UPDATE roots SET dropped = 1")  # the database refuses too
    writer.window.pin(topic)
    assert reader.refresh() and window.topic(topic).pinned  # others' commits load
    reader.close()
    writer.close()


def test_no_memory_is_created_for_a_reader(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no memory stored"):
        open_readonly(tmp_path, tmp_path / ".store")
    assert not store_path(tmp_path, tmp_path / ".store").parent.exists()


def test_a_team_memory_opens_read_only(tmp_path: Path, postgres: Any) -> None:
    import psycopg

    url = postgres.create_database(f"ro_{uuid.uuid4().hex[:12]}")
    with pytest.raises(StoreError, match="no team memory"):
        open_readonly(tmp_path, url=url)
    writer = Store.for_workspace(tmp_path, url=url)
    written(writer)
    reader = open_readonly(tmp_path, url=url)
    window = reader.open_window()
    assert len(window.topics()) == len(writer.window.topics())
    with pytest.raises(StoreError, match="read-only"):
        window.drop(window.topics()[0].id)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        reader.backend.conn.execute("UPDATE meta SET value = '0' WHERE key = 'rev'")
    reader.close()
    writer.close()
