"""deleteThread in the store (every window ends up with what a fresh open gives), the attachments
table, and a database made before it (schema 2) opening and migrating."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from topicforest.attachments import Attachment, fit
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.engine.tokens import estimate_tokens
from topicforest.store import Store
from topicforest.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

from .conftest import Memory, sample_messages, state_of, synthetic
from .test_store import feed


def test_a_deletion_in_one_window_is_what_every_window_and_a_restart_see(memory: Memory) -> None:
    a = memory.open()
    window = a.open_window()
    feed(window, sample_messages() + list(synthetic(80)), threads=3)
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))
    window.pin(window.topic_ids()[0])
    b = memory.open()
    other = b.open_window()
    doomed = a.thread_message_ids("thread-1")
    assert doomed and any(m in window.forest for m in doomed) and window.hot_messages("thread-1")

    changed = window.forget(doomed)

    assert changed and a.thread_message_ids("thread-1") == []
    assert "thread-1" not in [t.thread_id for t in a.threads()]
    assert b.refresh()  # the other window reloads whole: same state as a fresh open
    reopened = memory.open().open_window()
    assert state_of(other) == state_of(window) == state_of(reopened)
    assert not set(doomed) & set(other.forest)
    assert all(not set(doomed) & s.covered for s in other.summaries.values())
    assert b.mirror.threads_changed
    # Both go on working on the shared memory.
    other.append("thread-0", "user", "after the deletion")
    assert window.store.refresh() and window.hot_messages("thread-0")[-1].content.startswith(
        "after"
    )


def test_attachments_are_stored_beside_the_message_and_deleted_with_it(memory: Memory) -> None:
    store = memory.open()
    window = store.open_window()
    sent = fit(
        [Attachment("selection", "src/a.py", "x = 1\ny = 2", (4, 5), "python")],
        4096,
        estimate_tokens,
    )
    with store.transaction():
        message = window.append("t", "user", "look [attached src/a.py:5-6]")
        store.attachments.add(message.id, sent)
    store.close()
    reopened = memory.open()
    assert reopened.attachments.refs([message.id]) == {message.id: [sent[0].ref]}
    assert reopened.attachments.sent(message.id) == sent
    reopened.attachments.remove([message.id])
    assert reopened.attachments.refs([message.id]) == {}


def test_a_database_of_schema_2_opens_and_keeps_its_messages(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    old = sqlite3.connect(db_path)
    for script in MIGRATIONS[:2]:
        old.executescript(script)
    old.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    old.execute("PRAGMA user_version = 2")
    old.execute(
        "INSERT INTO messages (id, thread_id, role, content, timestamp, tokens, rev)"
        " VALUES (1, 't', 'user', 'kept from before', 1.0, 4, 1)"
    )
    old.execute("UPDATE meta SET value = 2 WHERE key = 'next_message_id'")
    old.commit()
    old.close()

    store = Store(db_path)
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    window = store.open_window()
    assert window.hot_messages("t")[0].content == "kept from before"
    assert store.meta_int("deletions") == 0 and store.attachments.refs([1]) == {}
    assert window.forget([1]) == set() and store.meta_int("deletions") == 1
