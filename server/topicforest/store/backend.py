"""The seam between the store and its database: one interface, two implementations.

`Store` (transactions, the mirror, the window) and `state.Mirror` (rows ⇄ engine state) speak
one SQL: `?` placeholders and `INSERT … ON CONFLICT … DO UPDATE`, which SQLite and PostgreSQL
both understand. What differs lives behind `Backend`: how to connect and migrate, how a write
transaction serializes with other processes, how durability and change detection work, the
maintenance lease, the few SQL fragments the two dialects spell differently, and how errors
read. `store.sqlite.SqliteBackend` is the embedded default; `store.postgres.PostgresBackend`
(needs the `team` extra) is the shared team memory.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """The DB-API subset the store uses (sqlite3.Connection as is; psycopg through an adapter)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...


class Lease(Protocol):
    """The maintenance lease: held by one process per memory; its holder's death frees it."""

    @property
    def held(self) -> bool: ...

    def try_acquire(self) -> bool: ...

    def alive(self) -> bool:
        """Whether a lease this process holds is still its own (False once it was lost)."""
        ...

    def release(self) -> None: ...

    def holder_pid(self) -> int | None: ...


class Dialect(abc.ABC):
    """The SQL the two databases spell differently."""

    #: `WHERE id <ids_clause>` with one parameter made by `ids_param`
    ids_clause: str

    @abc.abstractmethod
    def ids_param(self, ids: list[int]) -> object: ...

    @abc.abstractmethod
    def member_lists(self, conn: Connection) -> Iterable[tuple[int, list[int]]]:
        """Every topic's member ids in position order, as (root id, ids)."""


class Backend(abc.ABC):
    """Where one memory lives. `Store` calls these; each raises StoreError with the reason."""

    dialect: Dialect
    lease: Lease
    #: opened for reading only: every write transaction is refused (store/readonly.py)
    readonly: bool = False
    #: the exceptions of this database's driver (the store turns them into StoreError)
    errors: tuple[type[BaseException], ...]

    @property
    @abc.abstractmethod
    def where(self) -> str:
        """The memory's location for messages and logs (never a password)."""

    @property
    @abc.abstractmethod
    def conn(self) -> Connection: ...

    @abc.abstractmethod
    def describe(self, exc: BaseException) -> str:
        """A clear sentence for a driver error."""

    @abc.abstractmethod
    def begin_write(self, *, deferred: bool = False) -> None:
        """Begin a write transaction that no other process's write transaction overlaps.
        `deferred`: its commit may return before it is durable (`flush` makes it so)."""

    @abc.abstractmethod
    def begin_append(self, *, deferred: bool = False) -> None:
        """Begin a transaction that only adds messages (their threads' rows, attachments): it
        reads no shared state, so it need not wait for other writers where the database can
        avoid it (PostgreSQL); ids come from `new_message_id`."""

    @abc.abstractmethod
    def new_message_id(self) -> int:
        """A message id no other process gets, greater than every id committed before."""

    @abc.abstractmethod
    def count_append(self) -> Callable[[], int]:
        """In an append transaction: bump the memory's append counter (other processes reread
        hot zones and thread rows when it changes); returns how to read its new value once
        the transaction is over."""

    def batch(self) -> AbstractContextManager[object]:
        """Statements inside may be sent without waiting for each answer (PostgreSQL's
        pipeline mode); a result read inside waits for everything sent before it."""
        return nullcontext()

    @abc.abstractmethod
    def begin_read(self) -> None:
        """Begin a read transaction on one consistent snapshot."""

    def statement_conn(self) -> Connection:
        """Outside a transaction: the connection to run one statement on by itself (one
        statement sees one snapshot; no BEGIN and COMMIT round trips around it)."""
        return self.conn

    def before_commit(self, rev: int) -> None:  # noqa: B027 - optional: SQLite has nothing to do
        """The transaction wrote rows tagged `rev` (tell other processes, if the database can)."""

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    @abc.abstractmethod
    def rollback(self) -> None:
        """Roll back the open transaction, if any; never raises."""

    def after_commit(self) -> bool:
        """Checks after a commit, before it is acknowledged (SQLite: the file is still there);
        True if the commit is already durable (no `flush` needed for it)."""
        return False

    @abc.abstractmethod
    def flush(self) -> None:
        """Make every commit durable (SQLite fsyncs its WAL; PostgreSQL flushes its WAL past
        this connection's deferred commits); raises StoreError if one may be lost."""

    @abc.abstractmethod
    def changed_elsewhere(self, known_rev: int, known_appends: int) -> bool:
        """Whether another connection committed since this one last looked (cheap); `known_*`
        are the `rev` and `appends` counters last loaded."""

    @abc.abstractmethod
    def changes(self, stop: Any) -> AsyncIterator[None]:
        """Yields after other processes (may have) committed, until `stop` is set."""

    def imported(self, table: str, columns: list[str], rows: list[list[Any]]) -> list[list[Any]]:
        """An export's rows as this database takes them (an export from another backend may
        spell a flag as 0/1 or a counter as a number where this one keeps text)."""
        return rows

    def after_import(self) -> None:  # noqa: B027 - optional: SQLite's counters are exported
        """In an import's transaction, after its rows: bring what the database keeps outside
        the exported tables up to date with them."""

    def integrity_ok(self) -> bool:
        return True

    @abc.abstractmethod
    def close(self) -> None: ...
