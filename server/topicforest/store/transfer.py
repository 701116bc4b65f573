"""Moving memories: JSON export/import (lossless, table by table) and fork (a full copy)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from topicforest.store.errors import StoreError
from topicforest.store.schema import SCHEMA_VERSION
from topicforest.store.sqlite import describe
from topicforest.store.store import Store

FORMAT = "topicforest-memory"
TABLES = ("meta", "messages", "threads", "roots", "centroids", "doc_freq", "summaries", "spend",
          "pending", "attachments")  # fmt: skip
OPTIONAL = {"attachments"}  # exports made before it was exported have none
LOCAL_META = {"workspace"}  # describes where a store lives, not what it remembers


def export_memory(store: Store) -> dict[str, Any]:
    """Every row of every table, from one consistent snapshot."""

    def dump() -> dict[str, Any]:
        tables: dict[str, Any] = {}
        for table in TABLES:
            cursor = store.conn.execute(f"SELECT * FROM {table} ORDER BY 1")
            rows = [list(row) for row in cursor]
            if table == "meta":
                rows = [row for row in rows if row[0] not in LOCAL_META]
            tables[table] = {"columns": [c[0] for c in cursor.description], "rows": rows}
        return tables

    return {"format": FORMAT, "schema": SCHEMA_VERSION, "tables": store.read(dump)}


def import_memory(store: Store, data: object) -> int:
    """Load an export into an empty store; returns the number of messages imported."""
    tables = _validated(data)
    if not store.is_empty():
        raise StoreError(f"{store.where} already holds a memory; import into an empty one")
    try:
        with store.transaction():
            store.conn.execute("DELETE FROM meta WHERE key NOT IN ('workspace')")
            for table in TABLES:
                columns, rows = tables[table]["columns"], tables[table]["rows"]
                if table == "meta":
                    rows = [row for row in rows if row[0] not in LOCAL_META]
                if not rows:
                    continue
                rows = store.backend.imported(table, columns, rows)
                names = ", ".join(columns)
                marks = ", ".join("?" for _ in columns)
                store.conn.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)
            store.backend.after_import()
    except StoreError as exc:  # e.g. a constraint the file breaks; nothing was written
        raise StoreError(f"the export does not fit the store: {exc}") from exc
    store.reload()
    return len(tables["messages"]["rows"])


def _validated(data: object) -> dict[str, Any]:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StoreError(f"not a Topic Forest export (expected format {FORMAT!r})")
    if data.get("schema") != SCHEMA_VERSION:
        raise StoreError(
            f"the export has schema {data.get('schema')!r}; "
            f"this Topic Forest reads schema {SCHEMA_VERSION}"
        )
    tables = data.get("tables")
    if not isinstance(tables, dict):
        raise StoreError("the export has no tables")
    none: dict[str, Any] = {"columns": [], "rows": []}
    tables = {**{table: none for table in OPTIONAL}, **tables}  # the caller's export untouched
    for table in TABLES:
        entry = tables.get(table)
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("columns"), list)
            and isinstance(entry.get("rows"), list)
            and all(isinstance(c, str) and c.isidentifier() for c in entry["columns"])
            and all(isinstance(r, list) and len(r) == len(entry["columns"]) for r in entry["rows"])
        ):
            raise StoreError(f"the export's table {table!r} is malformed")
        for row in entry["rows"]:
            for value in row:
                _check_value(table, value)
    _check_references(tables)
    return tables


SQL_INTEGER = 2**63  # SQLite and PostgreSQL integers are 64-bit signed


def _check_value(table: str, value: object) -> None:
    """A cell must be a value both databases store: a bounded number, text, or null."""
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return
    if isinstance(value, int):
        if not -SQL_INTEGER <= value < SQL_INTEGER:
            raise StoreError(f"the export's table {table!r} holds an integer out of range")
        return
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise StoreError(f"the export's table {table!r} holds invalid text") from None
        return
    raise StoreError(f"the export's table {table!r} holds a {type(value).__name__}, not a value")


def _column(tables: dict[str, Any], table: str, column: str) -> list[Any]:
    entry = tables[table]
    if not entry["rows"]:
        return []
    try:
        index = entry["columns"].index(column)
    except ValueError:
        raise StoreError(f"the export's table {table!r} has no column {column!r}") from None
    return [row[index] for row in entry["rows"]]


def _check_references(tables: dict[str, Any]) -> None:
    """Every id the export's rows name is one it holds, as the engine's loading assumes (an
    import that broke this answered every later chat turn with an internal error)."""
    messages = set(_column(tables, "messages", "id"))
    if not all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in messages):
        raise StoreError("the export's message ids must be positive integers")
    members: dict[int, int] = {}  # topic root -> member count
    for message_id, root in zip(
        _column(tables, "messages", "id"), _column(tables, "messages", "root_id"), strict=True
    ):
        if root is not None:
            members[root] = members.get(root, 0) + 1
            if root not in messages:
                raise StoreError(f"message {message_id} belongs to topic {root!r}: no such message")
    roots = _column(tables, "roots", "id")
    root_of = dict(zip(_column(tables, "messages", "id"), _column(tables, "messages", "root_id"),
                       strict=True))  # fmt: skip
    for root, size in zip(roots, _column(tables, "roots", "size"), strict=True):
        if root_of.get(root) != root or members.get(root) != size:
            raise StoreError(f"topic {root!r} does not match its members in the export")
    if set(members) != set(roots):
        raise StoreError("the export's topics do not match its messages' topics")
    named = [
        (table, value)
        for table, column in (("pending", "message_id"), ("attachments", "message_id"))
        for value in _column(tables, table, column)
    ] + [
        ("threads", value)
        for value in _column(tables, "threads", "last_planted")
        if value is not None
    ]
    for table, covered in zip(
        ("summaries",) * len(tables["summaries"]["rows"]),
        _column(tables, "summaries", "covered"),
        strict=True,
    ):
        try:
            ids = json.loads(covered) if isinstance(covered, str) else None
        except ValueError:
            ids = None
        if not isinstance(ids, list):
            raise StoreError("the export's table 'summaries' has a malformed 'covered'")
        named += [(table, value) for value in ids]
    for table, value in named:
        if value not in messages:
            raise StoreError(
                f"the export's table {table!r} names message {value!r}: no such message"
            )
    topics = set(roots)
    for table in ("centroids", "summaries", "spend"):
        for root in _column(tables, table, "root_id"):
            if root not in topics:
                raise StoreError(
                    f"the export's table {table!r} names topic {root!r}: no such topic"
                )
    threads = set(_column(tables, "threads", "thread_id"))
    for thread in set(_column(tables, "messages", "thread_id")) - threads:
        raise StoreError(f"the export's thread {thread!r} is missing from its table 'threads'")


def fork_memory(source: Store, target_path: Path, workspace: str | None = None) -> Store:
    """Copy `source` into a new store at `target_path` (which must hold no memory yet)."""
    target = Store(target_path)
    if not target.is_empty():
        target.close()
        raise StoreError(f"{target_path} already holds a memory; fork into a new place")
    try:
        with source.lock:
            source.sqlite.backup(target.sqlite)
        with target.transaction():
            target.conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('workspace', ?)", (workspace,)
            )
            target.touch()
    except sqlite3.Error as exc:
        target.close()
        raise StoreError(describe(exc, target_path)) from exc
    return target
