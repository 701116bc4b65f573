"""The embedded backend: one SQLite file per workspace folder on this machine (the default).

Writers serialize on SQLite's write lock (`BEGIN IMMEDIATE`); a commit reaches the OS at once
(`synchronous=NORMAL`) and `flush` fsyncs the WAL before a change is acknowledged. The WAL is
copied into the database file by a `Checkpointer` thread, never inside a commit. Other
processes' commits are noticed through `PRAGMA data_version` after a file event (watchfiles on
the store's directory) or a 1 s fallback poll. The lease is an flock on `<file>.lease`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from topicforest.store.backend import Backend, Connection, Dialect
from topicforest.store.errors import StoreError
from topicforest.store.lease import Lease
from topicforest.store.schema import connect, connect_readonly

if TYPE_CHECKING:
    import watchfiles

log = logging.getLogger(__name__)

DEBOUNCE_MS = 150  # upper bound on batching a burst of commits
STEP_MS = 20  # quiet time that ends a batch
POLL_MS = 1000  # the fallback check when the file system sends no events (e.g. NFS)
CHECKPOINT_SECONDS = 1.0  # at most one checkpoint a second, after commits
# A WAL this long (4 KiB pages: 16 MiB) under writes that never pause long enough for a passive
# checkpoint to finish is restarted, blocking writers once, so the file cannot grow forever;
# a restarted WAL file is cut back to this size.
RESTART_FRAMES = 4096
WAL_LIMIT = f"PRAGMA journal_size_limit = {RESTART_FRAMES * 4096}"


class SqliteDialect(Dialect):
    ids_clause = "IN (SELECT value FROM json_each(?))"

    def ids_param(self, ids: list[int]) -> object:
        return json.dumps(ids)

    def member_lists(self, conn: Connection) -> Iterable[tuple[int, list[int]]]:
        rows = conn.execute(
            "SELECT root_id, json_group_array(id) FROM (SELECT id, root_id FROM messages"
            " WHERE root_id IS NOT NULL ORDER BY root_id, pos) GROUP BY root_id"
        )
        return ((root, json.loads(ids)) for root, ids in rows)


def describe(exc: BaseException, path: Path) -> str:
    code = getattr(exc, "sqlite_errorname", "")
    if code.startswith("SQLITE_FULL"):
        return f"the disk is full or the memory database {path} reached its size limit"
    if code.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")):
        return f"the memory database {path} cannot be written ({exc})"
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return f"the memory database {path} is damaged ({exc})"
    return f"memory database error in {path}: {exc}"


class SqliteBackend(Backend):
    dialect = SqliteDialect()
    errors = (sqlite3.Error,)

    def __init__(
        self, path: str | os.PathLike[str], *, max_pages: int | None = None, readonly: bool = False
    ) -> None:
        """`readonly`: an existing store, on a connection SQLite refuses every write on (no
        checkpoints either: a reader leaves the file as the writers keep it)."""
        self.path = Path(path)
        self.max_pages = max_pages
        self.readonly = readonly
        self.checkpointer: Checkpointer | None = None
        if readonly:
            self._conn = connect_readonly(self.path)
        else:
            self._conn = connect(self.path, max_pages=max_pages)
            self._conn.execute("PRAGMA wal_autocheckpoint = 0")  # see Checkpointer
            self._conn.execute(WAL_LIMIT).fetchall()
            self.checkpointer = Checkpointer(self.path)
        self._identity = _identity(self.path)  # the file this connection opened
        self.lease = Lease(self.path.with_name(self.path.name + ".lease"))
        self._data_version = self._pragma("data_version")
        self._wal_fd: int | None = None
        self._fd_lock = threading.Lock()  # flush runs in worker threads; never on a closed fd

    @property
    def where(self) -> str:
        return str(self.path)

    @property
    def conn(self) -> sqlite3.Connection:
        return self._conn

    def describe(self, exc: BaseException) -> str:
        return describe(exc, self.path)

    def begin_write(self, *, deferred: bool = False) -> None:  # commits are always deferred
        self._writable()
        self._conn.execute("BEGIN IMMEDIATE")

    def begin_append(self, *, deferred: bool = False) -> None:
        self._writable()
        self._conn.execute("BEGIN IMMEDIATE")  # one writer at a time; the lock is local and short

    def _writable(self) -> None:
        if self.readonly:
            raise StoreError(f"the memory database {self.path} is open read-only here")

    def new_message_id(self) -> int:
        conn = self._conn
        row = conn.execute("SELECT value FROM meta WHERE key = 'next_message_id'").fetchone()
        value = int(row[0])
        conn.execute("UPDATE meta SET value = ? WHERE key = 'next_message_id'", (value + 1,))
        return value

    def count_append(self) -> Callable[[], int]:
        conn = self._conn
        row = conn.execute("SELECT value FROM meta WHERE key = 'appends'").fetchone()
        value = (int(row[0]) if row else 0) + 1
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('appends', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (value,),
        )
        return lambda: value

    def begin_read(self) -> None:
        self._conn.execute("BEGIN")

    def rollback(self) -> None:
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    def after_commit(self) -> bool:
        """Returns True when the commit is already on disk (the file was written again)."""
        if _identity(self.path) != self._identity:
            self._recreate()  # never acknowledge into a file nobody will open again
            return True
        return False

    def flush(self) -> None:
        with self._fd_lock:
            self._fsync_wal()
        if self.checkpointer is not None:
            self.checkpointer.poke()

    def _fsync_wal(self) -> None:
        try:
            if self._wal_fd is None:
                self._wal_fd = os.open(f"{self.path}-wal", os.O_RDWR)
            os.fsync(self._wal_fd)
        except OSError as exc:
            raise StoreError(f"cannot flush the memory database {self.path}: {exc}") from exc

    def changed_elsewhere(self, known_rev: int, known_appends: int) -> bool:
        version = self._pragma("data_version")
        if version == self._data_version and known_rev >= 0:
            return False
        self._data_version = version
        return True

    async def changes(self, stop: asyncio.Event | None) -> AsyncIterator[None]:
        """SQLite replaces and truncates its -wal file, so the directory is watched, not the
        file, and only events for this database's files count."""
        import watchfiles  # imported here: it is not needed to answer the first requests

        names = {self.path.name, self.path.name + "-wal"}

        def ours(_change: watchfiles.Change, path: str) -> bool:
            return Path(path).name in names

        async for _changes in watchfiles.awatch(
            self.path.parent,
            watch_filter=ours,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=stop,
            rust_timeout=POLL_MS,
            yield_on_timeout=True,
            recursive=False,
        ):
            yield

    def integrity_ok(self) -> bool:
        return bool(self._conn.execute("PRAGMA quick_check").fetchone()[0] == "ok")

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
        with self._fd_lock:
            self.lease.release()
            self._conn.close()
            self._close_wal_fd()

    def _close_wal_fd(self) -> None:
        if self._wal_fd is not None:  # after SQLite's own handles: closing an fd drops
            os.close(self._wal_fd)  # the process's POSIX locks on that file
            self._wal_fd = None

    def _pragma(self, name: str) -> int:
        try:
            return int(self._conn.execute(f"PRAGMA {name}").fetchone()[0])
        except sqlite3.Error as exc:
            raise StoreError(describe(exc, self.path)) from exc

    def _recreate(self) -> None:
        """The database file was deleted (or replaced) while open: SQLite keeps writing to the
        unlinked file and everything is lost at exit. Write this connection's view (it still
        reads the unlinked file, commits included) to a new file at the path, and go on there."""
        if self.path.exists():
            raise StoreError(
                f"the memory database {self.path} was replaced while in use; not overwriting it"
            )
        log.warning("the memory database %s was deleted while in use; writing it again", self.path)
        fresh = self.path.with_name(self.path.name + ".restoring")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(fresh, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600))
            copy = sqlite3.connect(fresh)
            try:
                self._conn.backup(copy)  # rollback-journal, synchronous=FULL: on disk when done
            finally:
                copy.close()
            with self._fd_lock:
                self._conn.close()  # the old -wal/-shm names are removed with it
                self._close_wal_fd()
            for suffix in ("-wal", "-shm"):  # the deleted file's, should any be left
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            os.replace(fresh, self.path)
            _fsync_dir(self.path.parent)
            self._conn = connect(self.path, max_pages=self.max_pages)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"the memory database {self.path} was deleted while in use and could not be "
                f"written again: {exc}"
            ) from exc
        self._identity = _identity(self.path)
        self._data_version = self._pragma("data_version")


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None if there is none."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Checkpointer:
    """Copies the WAL into the database file in a thread of its own, at most once a second,
    after a flush pokes it. SQLite would otherwise checkpoint inside whichever commit took the
    WAL past 1,000 pages, fsyncing twice there: 10-30 ms added to a random commit, a chat
    turn's append among them. A passive checkpoint never waits for, nor holds up, a writer."""

    def __init__(self, path: Path) -> None:
        self._uri = f"{path.resolve().as_uri()}?mode=rw"  # never creates a deleted file again
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoint", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while self._wake.wait() and not self._stop.is_set():
            self._wake.clear()
            self.checkpoint()
            self._stop.wait(CHECKPOINT_SECONDS)

    def checkpoint(self) -> tuple[int, int]:
        """One passive checkpoint (a restart if the WAL is too long): (frames in the WAL,
        frames copied); (-1, -1) if it could not run (logged)."""
        try:
            conn = sqlite3.connect(self._uri, uri=True, isolation_level=None, timeout=10.0)
        except sqlite3.Error as exc:
            log.warning("cannot checkpoint the memory database: %s", exc)
            return -1, -1
        try:
            conn.execute(WAL_LIMIT).fetchall()
            _busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
            if frames > RESTART_FRAMES and copied < frames:
                started = time.perf_counter()
                _busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()[0]
                log.info(
                    "restarted the WAL of %d pages after %.0f ms (writers waited)",
                    frames,
                    1000 * (time.perf_counter() - started),
                )
            return int(frames), int(copied)
        except sqlite3.Error as exc:
            log.warning("cannot checkpoint the memory database: %s", exc)
            return -1, -1
        finally:
            conn.close()
