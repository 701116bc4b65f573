"""The workspace memory database: durable appends, transactions that keep processes in step.

Every change to a `StoredWindow` runs in one write transaction that first loads what other
processes committed (so the change applies to current state), then mutates the engine, writes the
difference and commits. If anything fails the transaction is rolled back and the window reloaded
from the database, so memory and disk never disagree and nothing is half-written. The database
itself is a `Backend`: the embedded SQLite file (default) or a shared PostgreSQL database.
"""

from __future__ import annotations

import getpass
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from topicforest.engine.config import WindowConfig
from topicforest.engine.errors import EngineError
from topicforest.engine.messages import Message
from topicforest.engine.tokens import TokenCounter, estimate_tokens
from topicforest.store.backend import Backend, Connection
from topicforest.store.errors import ForeignThread, StoreError
from topicforest.store.message_logs import SqliteAttachmentLog, SqliteMessageLog
from topicforest.store.paths import store_path
from topicforest.store.records import MESSAGE_COLUMNS, row_to_message, set_meta
from topicforest.store.sqlite import SqliteBackend
from topicforest.store.state import Mirror
from topicforest.store.stored_window import StoredWindow

log = logging.getLogger(__name__)
T = TypeVar("T")
_UNSYNCED: ContextVar[bool] = ContextVar("topicforest_unsynced", default=False)


@dataclass(frozen=True)
class ThreadRow:
    thread_id: str
    message_count: int
    last_time: float
    title: str


def default_user() -> str:
    """Who this process works for when `topicForest.user` is not set: the OS user."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return f"uid-{os.getuid()}"


class Store:
    """One memory: a `Backend` (a SQLite path by default) plus this process's view of it.

    `user` owns the threads this process writes; `threads` and `thread_history` show only
    that user's threads (and threads written before owners were recorded). Topics are shared.
    """

    def __init__(
        self,
        where: str | os.PathLike[str] | Backend,
        *,
        max_pages: int | None = None,
        user: str | None = None,
    ) -> None:
        self.backend = (
            where if isinstance(where, Backend) else SqliteBackend(where, max_pages=max_pages)
        )
        self.user = user or default_user()
        self.lease = self.backend.lease
        self.mirror = Mirror(self.backend.dialect)
        self.window: StoredWindow | None = None
        self.log = SqliteMessageLog(self)
        self.attachments = SqliteAttachmentLog(self)
        self.lock = threading.RLock()  # held by every use of the connection
        self._depth = 0  # nesting of transaction() and appending()
        self._appending = False  # the open transaction is an append
        self._rev = 0  # the rev the open write transaction writes with
        self._wrote = False
        self._commits = 0  # write transactions committed by this connection
        self._synced = 0  # how many of them are known to be on disk
        self._sync_lock = threading.Lock()
        self.owned_threads: set[str] = set()  # known to be this user's (owners never change)

    @classmethod
    def for_workspace(
        cls,
        workspace: str | os.PathLike[str] | None,
        store_dir: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        user: str | None = None,
        **kwargs: int | None,
    ) -> Store:
        """The workspace's memory: its SQLite file, or with `url` (topicForest.storeUrl) the
        team memory of its repository in that PostgreSQL database."""
        if url:
            from topicforest.store.identity import repository_identity
            from topicforest.store.postgres import PostgresBackend

            identity = repository_identity(workspace)
            store = cls(PostgresBackend(url, identity), user=user)
            label: str | None = identity
        else:
            store = cls(store_path(workspace, store_dir), user=user, **kwargs)
            label = None if workspace is None else str(Path(workspace).expanduser().resolve())
        if label is not None and store.meta("workspace") is None:
            with store.transaction():
                set_meta(store.conn, "workspace", label)
                store.touch()
        return store

    @property
    def conn(self) -> Connection:
        return self.backend.conn

    @property
    def sqlite(self) -> sqlite3.Connection:
        """The SQLite connection (file commands: fork's online backup)."""
        if not isinstance(self.backend, SqliteBackend):
            raise StoreError(f"the memory at {self.where} is not a SQLite file")
        return self.backend.conn

    @property
    def where(self) -> str:
        """Where the memory lives, for messages (a file path or a URL without password)."""
        return self.backend.where

    @property
    def path(self) -> Path:
        """The SQLite file (file commands: export, import, fork)."""
        if not isinstance(self.backend, SqliteBackend):
            raise StoreError(f"the memory at {self.where} is not a SQLite file")
        return self.backend.path

    def open_window(
        self,
        config: WindowConfig | None = None,
        *,
        count: TokenCounter = estimate_tokens,
        clock: Callable[[], float] = time.time,
    ) -> StoredWindow:
        """The store's window, restored from disk (one per store)."""
        window = StoredWindow(self, config, count=count, clock=clock)
        self.window = window
        self.read(lambda: self.mirror.load(self.conn, window, full=True))
        return window

    def reload(self) -> None:
        """Rebuild the window from the database (after writing rows behind its back)."""
        window = self.window
        if window is not None:
            self.read(lambda: self.mirror.load(self.conn, window, full=True))

    def close(self) -> None:
        with self.lock, self._sync_lock:  # not while a worker thread flushes
            self.backend.close()

    # -- durability ----------------------------------------------------------------------------
    @property
    def unsynced_commits(self) -> bool:
        """Whether this connection committed anything `sync` has not yet put on disk."""
        return self._synced < self._commits

    def sync(self) -> None:
        """Put every commit made so far on disk (SQLite: fsync the WAL), if not already there.

        What `PRAGMA synchronous = FULL` would do after each commit, done where a change is
        acknowledged instead; safe to call from a worker thread while others commit.
        """
        target = self._commits
        if self._synced >= target:
            return
        with self._sync_lock:
            if self._synced >= target:
                return
            try:
                self.backend.flush()
            except StoreError:  # a commit may be lost: memory may hold what the database lost
                self.mirror.stale = True  # so the next load rebuilds it whole
                raise
            self._synced = max(self._synced, target)

    @staticmethod
    @contextmanager
    def unsynced() -> Iterator[None]:
        """Commits the current task makes inside return before they are on disk: it must
        `sync()` before it acknowledges them (a chat turn overlaps that fsync with the model
        call; upkeep syncs off the loop after each round). Task-local: other tasks' commits,
        interleaved at awaits, still sync."""
        token = _UNSYNCED.set(True)
        try:
            yield
        finally:
            _UNSYNCED.reset(token)

    # -- transactions ------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[int]:
        """A write transaction (re-entrant) that starts from current state; yields its rev."""
        with self.lock:
            if self._depth:
                if self._appending:
                    raise RuntimeError("a write transaction cannot begin inside an append")
                yield from self._joined()
                return
            self._begin()
            try:
                yield self._rev
                window = self.window
                if window is not None:
                    self._wrote |= self.mirror.save(self.conn, window, self._rev)
                if self._wrote:
                    set_meta(self.conn, "rev", self._rev)
                    self.backend.before_commit(self._rev)
                self._commit()
                if self._wrote:
                    self.mirror.rev = self._rev
            except BaseException as exc:
                self._fail(exc)
            finally:
                self._depth = 0
                self._wrote = False
            if not _UNSYNCED.get():
                self.sync()

    @contextmanager
    def appending(self) -> Iterator[int]:
        """A transaction that only adds messages, their threads' rows and attachments (joins
        an open transaction of either kind); yields the rev its rows are tagged with.

        It is the chat turn's durable step, so it neither loads other processes' commits first
        nor (on PostgreSQL) waits for other writers: nothing it writes depends on shared state.
        The new rows carry the rev this process last loaded; other processes notice them by the
        append counter (`Mirror.appends`), not by their rev.
        """
        with self.lock:
            if self._depth:
                yield from self._joined()
                return
            try:
                with self.backend.batch():  # PostgreSQL: its statements go out together
                    self.backend.begin_append(deferred=_UNSYNCED.get())
                    self._depth, self._appending, self._rev = 1, True, max(self.mirror.rev, 0)
                    yield self._rev
                    counted = self.backend.count_append() if self._wrote else None
                    if counted is not None:
                        self.backend.before_commit(self._rev)
                    self.backend.commit()
                self._committed()
                if counted is not None and counted() == self.mirror.appends + 1:
                    self.mirror.appends = counted()  # no other process appended meanwhile
            except BaseException as exc:
                self._fail(exc)
            finally:
                self._depth = 0
                self._wrote = self._appending = False
            if not _UNSYNCED.get():
                self.sync()

    def _joined(self) -> Iterator[int]:
        self._depth += 1
        try:
            yield self._rev
        finally:
            self._depth -= 1

    def _commit(self) -> None:
        self.backend.commit()
        self._committed()

    def _committed(self) -> None:
        self._commits += 1
        if self.backend.after_commit():
            self._synced = self._commits

    def _fail(self, exc: BaseException) -> NoReturn:
        """Roll back and rebuild (see `_abort`), then raise: a driver error as StoreError."""
        self._abort(exc)
        if isinstance(exc, self.backend.errors):
            raise StoreError(self.backend.describe(exc)) from exc
        raise exc

    def touch(self) -> None:
        """Mark the open transaction as having written rows tagged with its rev."""
        self._wrote = True

    def _begin(self) -> None:
        try:
            self.backend.begin_write(deferred=_UNSYNCED.get())
            if self.window is not None:
                self.mirror.load(self.conn, self.window)  # apply the others' commits first
            self._rev = (
                int(self.conn.execute("SELECT value FROM meta WHERE key = 'rev'").fetchone()[0]) + 1
            )
        except BaseException as exc:
            self._fail(exc)
        self._depth = 1

    def _abort(self, exc: BaseException) -> None:
        self.backend.rollback()
        window = self.window
        # The engine leaves its state untouched when it rejects input; anything else may have
        # changed memory that is now not on disk, so memory is rebuilt from disk.
        if window is not None and not isinstance(exc, EngineError):
            try:
                self.read(lambda: self.mirror.load(self.conn, window, full=True))
            except Exception:  # damaged pages, a closed connection: not the error to report
                self.mirror.rev = -1  # retried by the next transaction or refresh

    @contextmanager
    def _driver_errors(self) -> Iterator[None]:
        """Outside a transaction (which translates its own): a driver error rolls back and
        is raised as a StoreError."""
        try:
            yield
        except self.backend.errors as exc:
            self.backend.rollback()
            raise StoreError(self.backend.describe(exc)) from exc

    def read(self, fn: Callable[[], T]) -> T:
        """Run `fn` on one consistent snapshot of the database."""
        with self.lock:
            if self._depth:  # inside a transaction, which translates its errors
                return fn()
            with self._driver_errors():
                self.backend.begin_read()
                try:
                    return fn()
                finally:
                    self.backend.commit()

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        """The rows of one read statement: in the open transaction, else by itself (on
        PostgreSQL a round trip instead of three, which a chat turn's render may pay)."""
        with self.lock:
            if self._depth:  # inside a transaction, which translates its errors
                return list(self.conn.execute(sql, params).fetchall())
            with self._driver_errors():
                return list(self.backend.statement_conn().execute(sql, params).fetchall())

    def row(self, sql: str, params: Sequence[object] = ()) -> Any | None:
        """The first row of one read statement (see `rows`), None if there is none."""
        found = self.rows(sql, params)
        return found[0] if found else None

    # -- other processes -------------------------------------------------------------------
    def changed_elsewhere(self) -> bool:
        """Whether another connection committed since we last looked (cheap)."""
        with self.lock, self._driver_errors():
            return self.backend.changed_elsewhere(self.mirror.rev, self.mirror.appends)

    def refresh(self) -> bool:
        """Load what other processes committed; returns whether the window changed."""
        window = self.window
        if window is None or not self.changed_elsewhere():
            return False
        return self.read(lambda: self.mirror.load(self.conn, window))

    # -- queries -----------------------------------------------------------------------------
    def meta(self, key: str) -> object:
        row = self.row("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0] if row else None

    def meta_int(self, key: str) -> int:
        value = self.meta(key)
        return int(value) if isinstance(value, (int, str)) else 0

    def threads(self) -> list[ThreadRow]:
        """This user's threads, newest first."""
        rows = self.rows(
            "SELECT thread_id, message_count, last_time, title FROM threads"
            " WHERE owner IN (?, '') ORDER BY last_time DESC",
            (self.user,),
        )
        return [ThreadRow(*row) for row in rows]

    def thread_history(self, thread_id: str, limit: int | None = None) -> list[Message]:
        """A thread's newest `limit` messages (all by default), oldest first; nothing for a
        thread of another user."""
        query = (
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE thread_id = ? AND EXISTS"
            " (SELECT 1 FROM threads WHERE thread_id = ? AND owner IN (?, '')) ORDER BY id DESC"
        )
        params: tuple[object, ...] = (thread_id, thread_id, self.user)
        if limit is not None:
            query, params = query + " LIMIT ?", (*params, limit)
        return [row_to_message(row) for row in reversed(self.rows(query, params))]

    def thread_message_ids(self, thread_id: str) -> list[int]:
        """The message ids of a thread this user may delete; ForeignThread if another
        person owns it."""
        self.check_owner(thread_id)
        rows = self.rows("SELECT id FROM messages WHERE thread_id = ? ORDER BY id", (thread_id,))
        return [row[0] for row in rows]

    def check_owner(self, thread_id: str) -> None:
        """Raise ForeignThread unless the thread is this user's (or written before owners were
        recorded, or unknown). A thread's owner never changes, so checking before the
        transaction that changes it is enough, and a thread found to be ours stays ours."""
        if thread_id in self.owned_threads:
            return
        row = self.row("SELECT owner FROM threads WHERE thread_id = ?", (thread_id,))
        if row is not None and row[0] not in (self.user, ""):
            raise ForeignThread(thread_id)
        if row is not None:
            self.owned_threads.add(thread_id)

    def last_user_message(self, thread_id: str) -> int | None:
        row = self.row(
            "SELECT max(id) FROM messages WHERE thread_id = ? AND role = 'user'", (thread_id,)
        )
        return row[0] if row else None

    def rename_thread(self, thread_id: str, title: str) -> ThreadRow | None:
        """Give a thread the user's title; None if there is no such thread, ForeignThread if
        another person owns it."""
        self.check_owner(thread_id)
        with self.transaction() as rev:
            updated = self.conn.execute(
                "UPDATE threads SET title = ?, rev = ? WHERE thread_id = ?", (title, rev, thread_id)
            ).rowcount
            if not updated:
                return None
            self.touch()
            row = self.conn.execute(
                "SELECT thread_id, message_count, last_time, title FROM threads"
                " WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
        return ThreadRow(*row)

    def count_deletion(self) -> None:
        """Inside the transaction that deletes: other windows reload whole when they see it."""
        with self.transaction():
            self.mirror.deletions = self.meta_int("deletions") + 1
            set_meta(self.conn, "deletions", self.mirror.deletions)
            self.touch()

    def message_count(self) -> int:
        return int(self.rows("SELECT count(*) FROM messages")[0][0])

    def is_empty(self) -> bool:
        """Whether the store remembers nothing yet (no messages, no topics)."""
        query = "SELECT NOT EXISTS (SELECT 1 FROM messages) AND NOT EXISTS (SELECT 1 FROM roots)"
        return bool(self.rows(query)[0][0])

    def integrity_ok(self) -> bool:
        return self.read(self.backend.integrity_ok)
