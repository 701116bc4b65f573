"""A workspace's memory opened for reading only, by a process that must never change it (the
MCP server that serves the memory to other agents, `topicforest.mcp`).

The database itself refuses every write: SQLite opens the file `mode=ro`, PostgreSQL sessions
default to READ ONLY transactions; and the backend refuses a write transaction before it
reaches the database. Nothing is created, migrated or tightened: a memory that does not exist
yet, or has a schema this version would have to upgrade, is a StoreError. The maintenance lease
is never taken (nobody starts upkeep on a read-only memory); other windows' commits load as
usual (`Store.refresh`, the watcher).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from topicforest.store.errors import StoreError
from topicforest.store.identity import repository_identity
from topicforest.store.paths import store_path
from topicforest.store.postgres import PostgresBackend
from topicforest.store.postgres_schema import SCHEMA_VERSION
from topicforest.store.sqlite import SqliteBackend
from topicforest.store.store import Store

if TYPE_CHECKING:
    import psycopg


def open_readonly(
    workspace: str | os.PathLike[str] | None,
    store_dir: str | os.PathLike[str] | None = None,
    *,
    url: str | None = None,
    user: str | None = None,
) -> Store:
    """The workspace's existing memory (its SQLite file, or with `url` its repository's team
    memory), read-only. StoreError (StoreUnreachable for a database that does not answer)."""
    if url:
        return Store(ReadOnlyPostgres(url, repository_identity(workspace)), user=user)
    return Store(SqliteBackend(store_path(workspace, store_dir), readonly=True), user=user)


class ReadOnlyPostgres(PostgresBackend):
    """A team memory's backend whose sessions cannot write (and that never migrates)."""

    readonly = True

    def _migrate(self, raw: psycopg.Connection[Any]) -> None:
        """Instead of migrating: make every transaction of the session READ ONLY, and check
        that the memory exists at this version."""
        raw.execute("SET default_transaction_read_only = on")
        found = raw.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s"
            " AND table_name = 'schema_version'",
            (self.schema,),
        ).fetchone()
        if found is None:
            raise StoreError(f"no team memory stored for {self.identity} in {self.where}")
        row = raw.execute(f"SELECT version FROM {self.schema}.schema_version").fetchone()
        version = int(row[0]) if row else 0
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"the team memory in {self.where} has schema {version}, this Topic Forest reads "
                f"{SCHEMA_VERSION}: open it in the editor once (it upgrades it), then try again"
            )

    def begin_write(self, *, deferred: bool = False) -> None:
        raise StoreError(f"the team memory in {self.where} is open read-only here")

    def begin_append(self, *, deferred: bool = False) -> None:
        raise StoreError(f"the team memory in {self.where} is open read-only here")
