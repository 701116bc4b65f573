"""The store in one process: restore exactness, durability, bad files, full disks."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from topicforest.engine import InvalidMessage, UnknownTopic
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.engine.window import ContextWindow
from topicforest.store import Store, StoreError, store_path
from topicforest.store.schema import SCHEMA_VERSION

from .conftest import Memory, sample_messages, state_of, synthetic


def feed(window: ContextWindow, messages: list[tuple[str, str]], threads: int = 2) -> None:
    """Append like several chat threads would, graduating as a maintainer would."""
    for i, (role, content) in enumerate(messages):
        window.append(f"thread-{(i // 8) % threads}", role, content, timestamp=1000.0 + i)
        window.graduate()


def build(window: ContextWindow) -> None:
    feed(window, sample_messages() + list(synthetic(120)))
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))
    feed(window, list(synthetic(16, seed=3)))  # some members no summary covers yet
    ids = window.topic_ids()
    window.drop(ids[0])
    window.pin(ids[1])
    window.expand(ids[2])
    window.flush_thread("thread-0")


def test_restart_restores_exact_state(memory: Memory) -> None:
    store = memory.open()
    window = store.open_window()
    build(window)
    before = state_of(window)
    assert before["summaries"] and before["pending"] and before["hot"]  # the case is non-trivial
    flags = [(t["dropped"], t["pinned"]) for t in before["topics"]]
    assert (True, False) in flags and (False, True) in flags
    store.close()

    reopened = memory.open().open_window()
    assert state_of(reopened) == before
    # No re-summarization: nothing that was clean is dirty after the restart.
    assert reopened.dirty_topic_ids() == before["dirty"]


def test_stored_window_behaves_like_the_plain_engine(memory: Memory) -> None:
    plain = ContextWindow()
    build(plain)
    stored = memory.open().open_window()
    build(stored)
    assert state_of(stored) == state_of(plain)
    query = "which port does postgres listen on"
    assert stored.render(query=query).text() == plain.render(query=query).text()


def test_append_is_durable_before_it_returns(memory: Memory) -> None:
    window = memory.open().open_window()
    message = window.append("t", "user", "Where is parse_config defined?")
    other = memory.open()  # a different connection, as another process would be
    row = other.conn.execute("SELECT thread_id, content FROM messages WHERE id = ?", (message.id,))
    assert tuple(row.fetchone()) == ("t", "Where is parse_config defined?")


def test_every_commit_is_fsynced_before_it_is_acknowledged(
    store: Store, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = store.open_window()
    window.append("t", "user", "warm up, so the WAL file exists")
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    wal = db_path.with_name(db_path.name + "-wal").stat().st_ino
    window.append("t", "assistant", "an ordinary append syncs before it returns")
    assert synced == [wal]
    with store.unsynced():  # a chat turn's question: committed now, synced during the model call
        window.append("t", "user", "deferred")
        window.append("t", "assistant", "also deferred")
    assert synced == [wal]
    store.sync()
    assert synced == [wal, wal]
    store.sync()  # nothing new: no second fsync
    assert synced == [wal, wal]


def test_invalid_message_stores_nothing(memory: Memory) -> None:
    store = memory.open()
    window = store.open_window()
    window.append("t", "user", "first")
    with pytest.raises(InvalidMessage):
        window.append("t", "robot", "who am I")
    with pytest.raises(InvalidMessage):
        window.append("t", "user", "\x00\x01binary")
    assert store.message_count() == 1
    assert window.append("t", "assistant", "second").id == 2
    with pytest.raises(UnknownTopic):
        window.drop(12345)


def test_files_are_private_and_in_wal_mode(store: Store, db_path: Path) -> None:
    store.open_window().append("t", "user", "hello there, general parse_config")
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_default_path_is_keyed_by_workspace(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert store_path(a).parent == store_path(b).parent
    assert store_path(a) != store_path(b)
    assert store_path(a) == store_path(tmp_path / "a" / ".." / "a")  # resolved first
    assert store_path(a, tmp_path / "custom").parent == tmp_path / "custom"


def test_threads_and_history(memory: Memory) -> None:
    store = memory.open()
    window = store.open_window()
    window.append("one", "user", "How do I configure ruff?", timestamp=10.0)
    window.append("one", "assistant", "Add [tool.ruff] to pyproject.toml", timestamp=11.0)
    window.append("two", "assistant", "(resumed)", timestamp=12.0)
    window.append("two", "user", "Now mypy strict mode please", timestamp=13.0)
    threads = {t.thread_id: t for t in store.threads()}
    assert threads["one"].message_count == 2 and threads["one"].last_time == 11.0
    assert threads["one"].title == "How do I configure ruff?"
    assert threads["two"].title == "Now mypy strict mode please"  # titled by a user message
    assert [t.thread_id for t in store.threads()] == ["two", "one"]  # newest first
    history = store.thread_history("one")
    assert [m.content for m in history] == ["How do I configure ruff?", history[1].content]
    assert [m.role for m in store.thread_history("two", limit=1)] == ["user"]


# -- bad files and bad disks ------------------------------------------------------------------
def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_corrupt_file_is_refused_untouched(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not a database at all\n" * 200)
    before = digest(db_path)
    with pytest.raises(StoreError, match="not a Topic Forest memory database"):
        Store(db_path)
    assert digest(db_path) == before


def test_foreign_sqlite_database_is_refused_untouched(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    other = sqlite3.connect(db_path)
    other.execute("CREATE TABLE notes (body TEXT)")
    other.execute("INSERT INTO notes VALUES ('mine')")
    other.commit()
    other.close()
    before = digest(db_path)
    with pytest.raises(StoreError, match="another application"):
        Store(db_path)
    assert digest(db_path) == before


def test_newer_schema_is_refused(db_path: Path) -> None:
    Store(db_path).close()
    raw = sqlite3.connect(db_path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(StoreError, match="newer Topic Forest"):
        Store(db_path)


def test_damaged_pages_give_a_store_error(db_path: Path) -> None:
    store = Store(db_path)
    feed(store.open_window(), list(synthetic(200)))
    store.close()
    data = bytearray(db_path.read_bytes())
    page = 4096
    for offset in range(page, len(data) - page, page):  # smash every page but the header
        data[offset : offset + 64] = b"\xff" * 64
    db_path.write_bytes(bytes(data))
    with pytest.raises(StoreError):
        Store(db_path).open_window()


@pytest.fixture
def readonly_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory this process cannot write to (a read-only tmpfs when running as root)."""
    target = tmp_path / "ro"
    target.mkdir()
    if os.geteuid() != 0:
        target.chmod(0o500)
        yield target
        target.chmod(0o700)
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)])
    if done.returncode != 0:
        pytest.skip("running as root and cannot mount a read-only tmpfs")
    yield target
    subprocess.run(["umount", str(target)], check=True)


def test_readonly_directory_gives_a_clear_error(readonly_dir: Path) -> None:
    with pytest.raises(StoreError, match="cannot create"):
        Store(readonly_dir / "memory.sqlite3")


def test_disk_full_loses_nothing_and_writes_nothing_partial(db_path: Path) -> None:
    Store(db_path).close()
    store = Store(db_path, max_pages=42)  # about 170 KiB: a full disk, reproducibly
    window = store.open_window()
    acknowledged = []
    big = " ".join(f"token_{i} handler.py parse_request" for i in range(400))
    with pytest.raises(StoreError, match="disk is full"):
        for i in range(200):
            message = window.append("t", "user" if i % 2 == 0 else "assistant", f"{i} {big}")
            acknowledged.append(message.id)
            window.graduate()
    assert acknowledged, "the cap should allow some messages first"
    # Memory and disk agree: what failed is in neither, the window still works.
    assert store.message_count() == len(acknowledged)
    assert state_of(window) == state_of(Store(db_path).open_window())
    assert store.integrity_ok()
    window.drop(window.topic_ids()[0])  # small changes still fit
    store.close()
    reopened = Store(db_path).open_window()
    assert [m.id for m in reopened.log.get_many(acknowledged)] == acknowledged
    assert reopened.topic(reopened.topic_ids()[0]).dropped


def test_in_memory_state_is_rebuilt_when_a_commit_fails(db_path: Path) -> None:
    store = Store(db_path)
    window = store.open_window()
    feed(window, list(synthetic(40)))
    before = state_of(window)
    store.conn.execute("PRAGMA query_only = 1")  # every write now fails at the database
    with pytest.raises(StoreError):
        window.graduate() if window.hot else None
        window.flush_thread(next(iter(window.hot)))
    store.conn.execute("PRAGMA query_only = 0")
    assert state_of(window) == before


def test_threads_are_per_person_topics_are_shared(memory: Memory) -> None:
    """A team memory: each person lists and reads only their own threads; everyone's
    messages form the same topics, and a drop by one is a drop for all."""
    ann, bob = memory.open(user="ann"), memory.open(user="bob")
    wa, wb = ann.open_window(), bob.open_window()
    feed(wa, list(synthetic(40)), threads=1)
    wb.append("bob-1", "user", "Does create_invoice validate due_date with alembic?")
    wa.flush_thread("thread-0")
    assert [t.thread_id for t in ann.threads()] == ["thread-0"]
    assert [t.thread_id for t in bob.threads()] == ["bob-1"]
    assert bob.thread_history("thread-0") == []  # not bob's
    assert [m.thread_id for m in bob.thread_history("bob-1")] == ["bob-1"]
    assert bob.refresh()
    topics = wa.topic_ids()
    assert topics and wb.topic_ids() == topics  # the topics are everyone's
    wb.drop(topics[0])
    assert ann.refresh() and wa.topic(topics[0]).dropped
