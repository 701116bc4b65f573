"""The team backend: one repository's memory in a PostgreSQL database, shared live.

Chosen by `topicForest.storeUrl` (`postgresql://user@host:5432/db`); needs the `team` extra
(psycopg 3), imported only here and only when used. One database holds many memories: each lives
in its own schema `topicforest_<hash of the repository identity>`, so every statement the store
shares with SQLite runs unchanged (`search_path`). Here: the backend (`PostgresBackend`), its
sessions, transactions, durability and change notifications; beside it `postgres_schema` (the
tables), `postgres_lease` (the maintenance lease) and `postgres_address` (URL, key, lock ids).

- Writers serialize on a transaction-level advisory lock per memory (what SQLite's write lock
  does); readers use REPEATABLE READ snapshots. Writers commit in `rev` order, so a snapshot
  always holds a prefix of the commits, as with SQLite. Appends (a chat turn's question) take no
  lock: ids come from a sequence, other windows notice them by the `appends` counter
  (`Store.appending`), and their statements are pipelined.
- A commit is durable when COMMIT returns (`synchronous_commit = on`, forced per session), except
  a deferred one (`Store.unsynced`): `flush` makes it durable from a worker thread.
- Every commit that wrote rows sends `NOTIFY topicforest_<hash>, '<rev>'` inside the
  transaction (delivered on commit); `changes` LISTENs on its own connection. A slow fallback
  check (`FALLBACK_SECONDS`) and a check after each reconnect catch anything missed.
- The maintenance lease (`AdvisoryLease`) is a session-level advisory lock on its own
  connection: the server releases it when that session ends (process killed, machine gone,
  network cut).
- Schema migrations (`MIGRATIONS`) are versioned (`schema_version`) and run under an advisory
  lock, so several windows opening a new memory at once migrate it once.
- The password never comes from settings: a URL carrying one is refused (`check_url`); libpq
  reads `PGPASSWORD` or `~/.pgpass`. TLS is the URL's `sslmode` (and `sslrootcert`, ...).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from topicforest.store.backend import Backend, Connection, Dialect
from topicforest.store.errors import StoreError, StoreUnreachable
from topicforest.store.postgres_address import (
    MIGRATE_LOCK,
    WRITE_LOCK,
    check_url,
    lock_id,
    memory_key,
)
from topicforest.store.postgres_lease import AdvisoryLease
from topicforest.store.postgres_schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5  # seconds: an unreachable host fails a request this fast
LOCK_TIMEOUT = "10s"  # a write waiting for another window's write (SQLite: busy_timeout)
FALLBACK_SECONDS = 5.0  # the listener also checks this often, should a notification be lost
STOP_SECONDS = 0.5  # how soon the listener notices it should stop
RETRY_SECONDS = 1.0  # between the listener's reconnection attempts
# After a notification, others of the same burst are awaited this long and loaded with it: four
# windows chatting at once commit some 150 times a second, and each reload costs every window.
COALESCE_SECONDS = 0.02


@lru_cache(maxsize=512)
def _pg_sql(statement: str) -> str:
    """The store's `?` placeholders as psycopg's `%s` (the store's SQL has no literal ? or %)."""
    return statement.replace("%", "%%").replace("?", "%s")


class PgConnection:
    """A psycopg connection that speaks the store's SQL (the `Connection` protocol)."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> psycopg.Cursor[Any]:
        return self.raw.execute(_pg_sql(sql), tuple(parameters))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        rows = list(parameters)
        if rows:
            with self.raw.cursor() as cursor:
                cursor.executemany(_pg_sql(sql), rows)


class PostgresDialect(Dialect):
    ids_clause = "= ANY(?)"

    def ids_param(self, ids: list[int]) -> object:
        return ids

    def member_lists(self, conn: Connection) -> Iterable[tuple[int, list[int]]]:
        return conn.execute(  # type: ignore[no-any-return]
            "SELECT root_id, array_agg(id ORDER BY pos) FROM messages"
            " WHERE root_id IS NOT NULL GROUP BY root_id"
        )


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise StoreError(
            "topicForest.storeUrl needs PostgreSQL support: install topicforest[team] "
            f"(psycopg 3) into the server's environment ({exc})"
        ) from exc
    return psycopg


class PostgresBackend(Backend):
    dialect = PostgresDialect()

    def __init__(self, url: str, identity: str) -> None:
        try:
            self.url = check_url(url)
        except ValueError as exc:
            raise StoreError(f"topicForest.storeUrl {exc}") from exc
        self.psycopg = _psycopg()
        self.errors = (self.psycopg.Error,)
        self.identity = identity
        self.key = memory_key(identity)
        self.schema = f"topicforest_{self.key}"  # also the NOTIFY channel
        self.lock_id = lock_id(self.key)
        self._raw: psycopg.Connection[Any] | None = None
        self._conn: PgConnection | None = None
        self._started: object = None  # the server's start time, seen by the store's session
        self._flush_raw: psycopg.Connection[Any] | None = None
        self.deferrable = True  # deferred commits can be flushed (see `flush`)
        self._deferred = False  # the open transaction's commit is deferred
        self._unflushed: object = None  # deferred commits wait for the server started then
        self.lease = AdvisoryLease(self)
        try:
            self._open()
        except self.psycopg.Error as exc:
            self.close()
            unreachable = isinstance(exc, self.psycopg.OperationalError)
            raise (StoreUnreachable if unreachable else StoreError)(self.describe(exc)) from exc

    # -- connections -------------------------------------------------------------------------
    def connect(self, purpose: str) -> psycopg.Connection[Any]:
        """A new autocommit session (the store issues BEGIN/COMMIT itself)."""
        raw: psycopg.Connection[Any] = self.psycopg.connect(
            self.url, autocommit=True, **self._options(purpose)
        )
        return raw

    def _options(self, purpose: str) -> dict[str, Any]:
        name = f"topicforest:{socket.gethostname()[:30]}:{os.getpid()}:{purpose}"
        return {
            "connect_timeout": CONNECT_TIMEOUT,
            "application_name": name[:63],
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
        }

    def _open(self) -> None:
        raw = self.connect("store")
        try:
            raw.execute("SET synchronous_commit = on")  # a commit is durable when it returns
            raw.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
            started = raw.execute("SELECT pg_postmaster_start_time()").fetchone()
            self._started = started[0] if started else None
            self._migrate(raw)
            raw.execute(f"SET search_path TO {self.schema}")
        except BaseException:
            raw.close()
            raise
        self._raw, self._conn = raw, PgConnection(raw)

    def _migrate(self, raw: psycopg.Connection[Any]) -> None:
        schema = self.schema
        with raw.transaction():
            raw.execute("SELECT pg_advisory_xact_lock(%s, %s)", (MIGRATE_LOCK, self.lock_id))
            tables = {
                row[0]
                for row in raw.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                    (schema,),
                )
            }
            if tables and "schema_version" not in tables:
                raise StoreError(f"schema {schema} in {self.where} is not a Topic Forest memory")
            if not tables:
                raw.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                raw.execute(f"CREATE TABLE {schema}.schema_version (version INTEGER NOT NULL)")
                raw.execute(f"INSERT INTO {schema}.schema_version VALUES (0)")
            version = raw.execute(f"SELECT version FROM {schema}.schema_version").fetchone()
            current = int(version[0]) if version else 0
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"the team memory in {self.where} was written by a newer Topic Forest "
                    f"(schema {current}, this one knows {SCHEMA_VERSION}); upgrade Topic Forest"
                )
            raw.execute(f"SET LOCAL search_path TO {schema}")
            for index in range(current, SCHEMA_VERSION):
                raw.execute(MIGRATIONS[index])
            if current < SCHEMA_VERSION:
                raw.execute(f"UPDATE {schema}.schema_version SET version = {SCHEMA_VERSION}")
                log.info("team memory %s migrated to schema %d", schema, SCHEMA_VERSION)

    def _live(self) -> PgConnection:
        """The store's connection, opened again if the last one broke (server restart)."""
        raw = self._raw
        if raw is None or raw.closed or raw.broken:
            if raw is not None:
                with contextlib.suppress(Exception):
                    raw.close()
            self._raw = self._conn = None
            self._open()
            log.info("reconnected to the team memory %s", self.where)
        assert self._conn is not None
        return self._conn

    @property
    def backend_pid(self) -> int | None:
        raw = self._raw
        return raw.info.backend_pid if raw is not None and not raw.closed else None

    # -- Backend -------------------------------------------------------------------------------
    @property
    def where(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}{parts.path} (memory of {self.identity})"

    @property
    def conn(self) -> PgConnection:
        """The current session; reconnecting happens only where a transaction begins, never
        in the middle of one (its statements would run outside it)."""
        if self._conn is None:
            return self._live()
        return self._conn

    def describe(self, exc: BaseException) -> str:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, self.psycopg.OperationalError):
            return f"the team memory database {self.where} is unreachable: {detail}"
        return f"team memory database error in {self.where}: {detail}"

    def begin_write(self, *, deferred: bool = False) -> None:
        self._begin(deferred).execute(
            "SELECT pg_advisory_xact_lock(?, ?)", (WRITE_LOCK, self.lock_id)
        )

    def begin_append(self, *, deferred: bool = False) -> None:
        """No writer lock: the rows an append writes are new (a message from the sequence),
        or updated atomically (its thread's row, the append counter); READ COMMITTED."""
        self._begin(deferred)

    def _begin(self, deferred: bool) -> PgConnection:
        """BEGIN; a deferred transaction's COMMIT returns before the server flushed its WAL
        (`synchronous_commit = off` for it alone): `flush` waits for that, off the chat path."""
        conn = self._live()
        self._deferred = deferred and self.deferrable
        conn.execute("BEGIN")
        if self._deferred:
            conn.execute("SET LOCAL synchronous_commit = off")
        return conn

    def after_commit(self) -> bool:
        deferred, self._deferred = self._deferred, False
        # a synchronous commit also made every earlier one durable
        self._unflushed = self._started if deferred else None
        return not deferred

    def new_message_id(self) -> int:
        return _one(self.conn.execute("SELECT nextval('message_ids')"))

    def imported(self, table: str, columns: list[str], rows: list[list[Any]]) -> list[list[Any]]:
        kinds = dict(
            self.conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = ? AND table_name = ?",
                (self.schema, table),
            ).fetchall()
        )
        cast = [_IMPORT_CASTS.get(kinds.get(column, ""), _same) for column in columns]
        return [[v if v is None else c(v) for c, v in zip(cast, row, strict=True)] for row in rows]

    def after_import(self) -> None:
        """New ids continue after the imported messages'; the append counter exists."""
        self.conn.execute(
            "SELECT setval('message_ids', (SELECT COALESCE(max(id), 0) + 1 FROM messages), false)"
        )
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('appends', '0') ON CONFLICT (key) DO NOTHING"
        )

    def count_append(self) -> Callable[[], int]:
        cursor = self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('appends', '1') ON CONFLICT (key)"
            " DO UPDATE SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT)"
            " RETURNING value"
        )
        return lru_cache(maxsize=1)(lambda: _one(cursor))  # read after the pipeline's sync

    def batch(self) -> AbstractContextManager[object]:
        """Pipeline mode: an append's BEGIN, id and inserts take one round trip, its counter,
        NOTIFY and COMMIT another, instead of one each."""
        return self._live().raw.pipeline()

    def begin_read(self) -> None:
        self._live().execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def statement_conn(self) -> PgConnection:
        return self._live()  # autocommit: the statement is its own transaction

    def before_commit(self, rev: int) -> None:
        self._live().execute("SELECT pg_notify(?, ?)", (self.schema, str(rev)))

    def rollback(self) -> None:
        self._deferred = False
        raw = self._raw
        if raw is None or raw.closed or raw.broken:
            return
        with contextlib.suppress(Exception):
            if raw.info.transaction_status != self.psycopg.pq.TransactionStatus.IDLE:
                raw.execute("ROLLBACK")

    def flush(self) -> None:
        """Flush the server's WAL past this connection's deferred commits: a transactional
        WAL message committed synchronously on a connection of its own (so a worker thread can
        wait for it while the store's connection serves the loop). Refused if the server that
        took the deferred commits restarted since: they may be lost."""
        started = self._unflushed  # read once: the loop thread may commit again meanwhile
        if started is None:  # the last commit was synchronous: it flushed the ones before
            return
        psycopg = self.psycopg
        try:
            row = self._flush_once()
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFunction):
            log.warning("cannot flush the team memory's WAL; committing synchronously")
            self.deferrable = False  # the next commit is synchronous: it flushes the WAL
            return
        except psycopg.OperationalError:  # the session may be from before a server restart
            self._drop_flush()
            try:
                row = self._flush_once()
            except psycopg.Error as exc:
                self._drop_flush()
                raise StoreError(self.describe(exc)) from exc
        except psycopg.Error as exc:
            self._drop_flush()
            raise StoreError(self.describe(exc)) from exc
        if row is None or row[0] != started:
            raise StoreError(
                f"the team memory database {self.where} restarted before its last changes "
                "were on disk; they may be lost"
            )

    def _flush_once(self) -> Any:
        raw = self._flush_raw
        if raw is None or raw.closed or raw.broken:
            raw = self._flush_raw = self.connect("flush")
            raw.execute("SET synchronous_commit = on")
        return raw.execute(
            "SELECT pg_postmaster_start_time(), pg_logical_emit_message(true, 'topicforest', '')"
        ).fetchone()

    def _drop_flush(self) -> None:
        raw, self._flush_raw = self._flush_raw, None
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.close()

    def changed_elsewhere(self, known_rev: int, known_appends: int) -> bool:
        rows = dict(
            self._live().execute("SELECT key, value FROM meta WHERE key IN ('rev', 'appends')")
        )
        known = {"rev": str(known_rev), "appends": str(known_appends)}
        return known_rev < 0 or rows != known

    async def changes(self, stop: asyncio.Event | None) -> AsyncIterator[None]:
        """After each NOTIFY from another session; also after (re)connecting and every
        `FALLBACK_SECONDS` (a cheap check, should a notification have been missed)."""
        psycopg = self.psycopg
        while stop is None or not stop.is_set():
            try:
                listener = await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, **self._options("listen")
                )
            except psycopg.Error as exc:
                log.warning("cannot listen to the team memory: %s", self.describe(exc))
                await _wait(stop, RETRY_SECONDS)
                continue
            try:
                async with listener:
                    await listener.execute(f"LISTEN {self.schema}")
                    yield  # whatever was committed while not listening
                    due = time.monotonic() + FALLBACK_SECONDS
                    while stop is None or not stop.is_set():
                        heard = False
                        async for note in listener.notifies(timeout=STOP_SECONDS):
                            if note.pid != self.backend_pid:  # not our own commit
                                heard = True
                                break
                        if heard:  # the rest of its burst: one reload for all of it
                            async for _ in listener.notifies(timeout=COALESCE_SECONDS):
                                pass
                        if heard or time.monotonic() >= due:  # or the fallback check is due
                            due = time.monotonic() + FALLBACK_SECONDS
                            yield
            except psycopg.Error as exc:
                log.warning("lost the team memory listener: %s", self.describe(exc))
                await _wait(stop, RETRY_SECONDS)

    def close(self) -> None:
        self.lease.release()
        self._drop_flush()
        raw, self._raw, self._conn = self._raw, None, None
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.close()


def _same(value: Any) -> Any:
    return value


# An export from SQLite spells booleans 0/1 and may hold numbers in text columns (meta).
_IMPORT_CASTS: dict[str, Callable[[Any], Any]] = {
    "boolean": bool, "text": str, "bigint": int, "integer": int, "double precision": float,
}  # fmt: skip


def _one(cursor: psycopg.Cursor[Any]) -> int:
    """The integer a one-row, one-column statement returned."""
    row = cursor.fetchone()
    if row is None:
        raise StoreError("the team memory database answered no row")
    return int(row[0])


async def _wait(stop: asyncio.Event | None, seconds: float) -> None:
    if stop is None:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
