"""Appends (a chat turn's durable step) and thread ownership, on both backends.

An append reads no shared state, so it neither loads other processes' commits first nor, on
PostgreSQL, waits for another process's write transaction (the maintainer's upkeep). Other
windows still see it, ids stay unique and ordered, and a write transaction that overlapped it
loses nothing.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable

import pytest

from topicforest.store import Store, StoreError
from topicforest.store.errors import ForeignThread
from topicforest.store.postgres import PostgresBackend
from topicforest.testing.postgres import TempPostgres, wait_until_reachable

from .conftest import Memory, state_of, synthetic
from .test_store import feed


def in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run `fn` in a thread; its result (or exception) lands in the returned list."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(fn())
        except Exception as exc:  # reported by the test
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_an_append_does_not_wait_for_another_windows_write_transaction(memory: Memory) -> None:
    """The maintainer holds the writer lock for a whole upkeep transaction; a turn's question
    in another window commits meanwhile (PostgreSQL; SQLite has one writer at a time, so
    there it commits right after), and nothing is lost on either side."""
    maintainer, chatter = memory.open(user="ann"), memory.open(user="bob")
    wm, wc = maintainer.open_window(), chatter.open_window()
    feed(wm, list(synthetic(40)), threads=2)
    with maintainer.transaction():
        wm.graduate()  # upkeep work inside the writer's transaction
        appending, out = in_thread(lambda: wc.append("bob-1", "user", "Is alembic needed?"))
        appending.join(timeout=120 if memory.kind == "postgresql" else 3)
        if memory.kind == "postgresql":
            assert not appending.is_alive(), "the append waited for the writer lock"
        wm.flush_thread("thread-0")
    appending.join(timeout=120)
    (question,) = out
    assert not isinstance(question, Exception), question
    assert maintainer.refresh()  # the maintainer sees the question, in its hot zone
    assert [m.content for m in wm.hot["bob-1"]] == ["Is alembic needed?"]
    assert chatter.refresh()  # and bob sees the upkeep
    fresh = memory.open()
    assert state_of(fresh.open_window()) == state_of(wm) == state_of(wc)


def test_ids_stay_unique_and_ordered_across_processes(memory: Memory) -> None:
    stores = [memory.open(user=f"dev{k}") for k in range(3)]
    windows = [s.open_window() for s in stores]
    results: list[list[int]] = [[] for _ in windows]

    def chat(k: int) -> None:
        for i in range(15):
            results[k].append(windows[k].append(f"t{k}", "user", f"question {i} from {k}").id)

    threads = [threading.Thread(target=chat, args=(k,)) for k in range(len(windows))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    ids = [i for r in results for i in r]
    assert len(ids) == 45 and len(set(ids)) == 45
    assert all(r == sorted(r) for r in results)  # each window's turns in the order it wrote
    later = windows[0].append("t0", "user", "after everyone")
    assert later.id > max(ids)  # ordered after every id committed before
    fresh = memory.open(user="dev0")
    assert [m.id for m in fresh.thread_history("t0")] == [*results[0], later.id]
    assert sorted(m.id for zone in fresh.open_window().hot.values() for m in zone) == sorted(
        [*ids, later.id]
    )


def test_another_window_sees_an_append_and_its_own_append_costs_no_reload(
    memory: Memory,
) -> None:
    a, b = memory.open(user="ann"), memory.open(user="ann")
    wa, wb = a.open_window(), b.open_window()
    wa.append("t", "user", "How do I run alembic upgrade head?")
    assert not a.changed_elsewhere()  # its own append: nothing to load
    assert b.refresh()
    assert b.mirror.threads_changed  # the thread list changed too
    assert b.mirror.appended_to == {"t"}  # and which thread's transcript did
    assert [m.content for m in wb.hot["t"]] == ["How do I run alembic upgrade head?"]
    assert [t.thread_id for t in b.threads()] == ["t"]
    assert not b.refresh()  # once
    b.mirror.appended_to.clear()
    wb.append("t", "assistant", "Run it from the directory holding alembic.ini.")
    wa.append("u", "user", "And the downgrade?")
    assert a.refresh() and b.refresh()
    assert a.mirror.appended_to == {"t"}  # b's append to t; a's own to u is not news to a
    assert b.mirror.appended_to == {"u"}


def test_an_append_inside_a_write_transaction_joins_it(memory: Memory) -> None:
    store = memory.open()
    window = store.open_window()
    with store.transaction():
        window.append("t", "user", "one")
        window.append("t", "assistant", "two")
    with store.appending(), pytest.raises(RuntimeError):  # a writer cannot begin in an append
        store.transaction().__enter__()
    assert [m.content for m in memory.open().thread_history("t")] == ["one", "two"]


def test_only_the_owner_renames_or_deletes_a_thread(memory: Memory) -> None:
    ann, bob = memory.open(user="ann"), memory.open(user="bob")
    wa = ann.open_window()
    wa.append("ann-1", "user", "Where is create_invoice?")
    for change in (
        lambda: bob.rename_thread("ann-1", "mine now"),
        lambda: bob.thread_message_ids("ann-1"),  # what a delete starts with
    ):
        with pytest.raises(ForeignThread, match=r"ann-1.*belongs to another person"):
            change()
    assert [t.title for t in ann.threads()] == ["Where is create_invoice?"]
    renamed = ann.rename_thread("ann-1", "Invoices")
    assert renamed is not None and renamed.title == "Invoices"
    assert ann.thread_message_ids("ann-1") and bob.rename_thread("nope", "x") is None
    # a thread written before owners were recorded is everyone's
    with ann.transaction():
        ann.conn.execute("UPDATE threads SET owner = '' WHERE thread_id = 'ann-1'")
        ann.touch()
    assert bob.rename_thread("ann-1", "Shared") is not None


def test_only_the_owner_writes_to_a_thread(memory: Memory) -> None:
    ann, bob = memory.open(user="ann"), memory.open(user="bob")
    wa, wb = ann.open_window(), bob.open_window()
    wa.append("ann-1", "user", "Where is create_invoice?")
    bob.refresh()
    before = state_of(wb)
    for write in (
        lambda: wb.append("ann-1", "assistant", "In server/api/invoices.py."),
        lambda: wb.append("ann-1", "user", "Mine now?", timestamp=1.0),
    ):
        with pytest.raises(ForeignThread, match=r"ann-1.*belongs to another person"):
            write()
    with bob.appending(), pytest.raises(ForeignThread):  # inside an append (a turn's question)
        wb.append("ann-1", "user", "And inside a transaction?")
    assert state_of(wb) == before  # refused before the engine saw it
    assert [m.content for m in ann.thread_history("ann-1")] == ["Where is create_invoice?"]
    assert bob.meta_int("appends") == 1  # nothing was written
    wb.append("bob-1", "user", "Where is pg_isready configured?")  # his own thread: fine
    wb.append("bob-1", "assistant", "In infra/docker-compose.yml.")
    assert [t.thread_id for t in bob.threads()] == ["bob-1"]
    assert state_of(wb) == state_of(memory.open(user="bob").open_window())


def test_a_memory_written_before_appends_were_counted_takes_appends(memory: Memory) -> None:
    """Memories from before have no `appends` row: the first append creates it."""
    store = memory.open()
    window = store.open_window()
    with store.transaction():
        store.conn.execute("DELETE FROM meta WHERE key = 'appends'")
        store.touch()
    window.append("t", "user", "first after the upgrade")
    other = memory.open()
    assert [m.content for m in other.thread_history("t")] == ["first after the upgrade"]
    assert other.meta_int("appends") == 1


def test_a_deferred_commit_is_durable_after_sync_and_refused_if_the_server_restarted(
    postgres: TempPostgres,
) -> None:
    """PostgreSQL: a turn's question commits without waiting for the WAL flush (what SQLite's
    unsynced commit does); `sync` (while the model answers) makes it durable, and refuses if
    the server crashed in between, so such a turn is never acknowledged."""
    url = postgres.create_database(f"defer_{uuid.uuid4().hex[:12]}")
    store = Store(PostgresBackend(url, "example.com/defer"), user="ann")
    try:
        window = store.open_window()
        with Store.unsynced():
            window.append("t", "user", "kept")
        assert store.unsynced_commits
        store.sync()
        assert not store.unsynced_commits
        postgres.halt("immediate")  # a crash right after the acknowledgement
        postgres.resume()
        wait_until_reachable(url)
        with contextlib.suppress(StoreError):  # the store's session died with the server
            store.refresh()
        assert [m.content for m in store.thread_history("t")] == ["kept"]

        with Store.unsynced():
            window.append("t", "user", "maybe lost")
        postgres.halt("immediate")
        postgres.resume()
        wait_until_reachable(url)
        with pytest.raises(StoreError, match="restarted before its last changes"):
            store.sync()
        assert store.mirror.stale  # the next load rebuilds the window from what survived
        with contextlib.suppress(StoreError):  # the store's session died with the server
            window.append("t", "user", "after")
        window.append("t", "user", "after")
        assert {m.content for m in window.hot["t"]} <= {"kept", "maybe lost", "after"}
        assert [m.content for m in window.hot["t"]] == [
            m.content for m in store.thread_history("t")
        ]
    finally:
        store.close()


def test_a_window_that_saw_commits_the_database_lost_rebuilds_itself(memory: Memory) -> None:
    """What a PostgreSQL crash before a deferred commit's flush leaves other windows with:
    counters lower than they saw. Their next load rebuilds them from what the database has."""
    writer, reader = memory.open(user="ann"), memory.open(user="ann")
    ww, wr = writer.open_window(), reader.open_window()
    feed(ww, list(synthetic(24)), threads=1)
    ww.flush_thread("thread-0")
    topic = ww.topic_ids()[0]
    before = writer.meta_int("rev")
    row_rev = writer.conn.execute("SELECT rev FROM roots WHERE id = ?", (topic,)).fetchone()[0]
    ww.drop(topic)
    ww.append("thread-0", "user", "and the invoice PDF?")
    assert reader.refresh() and wr.topic(topic).dropped
    with writer.transaction():  # the database "loses" the drop and the append
        conn = writer.conn
        conn.execute("UPDATE roots SET dropped = ?, rev = ? WHERE id = ?", (False, row_rev, topic))
        conn.execute("DELETE FROM messages WHERE content = ?", ("and the invoice PDF?",))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'rev'", (str(before),))
        appends = writer.meta_int("appends")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'appends'", (str(appends - 1),))
    reader.refresh()
    assert not wr.topic(topic).dropped
    assert state_of(wr) == state_of(memory.open().open_window())
