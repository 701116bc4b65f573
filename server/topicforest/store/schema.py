"""Opening the database file safely, and the schema with its forward migrations.

The schema version is `PRAGMA user_version`; MIGRATIONS[i] upgrades version i to i + 1. A file
that is not SQLite, another application's database, or one made by a newer Topic Forest is
refused with a StoreError instead of being touched.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from pathlib import Path

from topicforest.store.errors import StoreError

log = logging.getLogger(__name__)

APPLICATION_ID = 0x54467374  # "TFst": marks the file as ours (PRAGMA application_id)

# Every row that other processes must notice carries `rev`, the store-wide change counter
# (meta 'rev') of the transaction that wrote it, so a reader loads only rows newer than it saw.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        thread_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        content TEXT NOT NULL,
        timestamp REAL NOT NULL,
        tokens INTEGER NOT NULL,
        cancelled INTEGER NOT NULL DEFAULT 0,
        root_id INTEGER,  -- the topic it belongs to; NULL while in its thread's hot zone
        pos INTEGER,      -- its place in the topic's member list
        terms TEXT,       -- its embedded terms, space-separated (for the recall index)
        rev INTEGER NOT NULL
    );
    CREATE INDEX messages_rev ON messages (rev);
    CREATE INDEX messages_thread ON messages (thread_id, id);
    CREATE INDEX messages_root ON messages (root_id, pos) WHERE root_id IS NOT NULL;
    CREATE TABLE threads (
        thread_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        first_time REAL NOT NULL,
        last_time REAL NOT NULL,
        message_count INTEGER NOT NULL,
        last_planted INTEGER,  -- newest message of the thread that graduated
        rev INTEGER NOT NULL
    );
    CREATE TABLE roots (
        id INTEGER PRIMARY KEY,
        ord INTEGER NOT NULL,
        version INTEGER NOT NULL,
        size INTEGER NOT NULL,
        dropped INTEGER NOT NULL,
        pinned INTEGER NOT NULL,
        expanded INTEGER NOT NULL,
        rev INTEGER NOT NULL
    );
    CREATE TABLE centroids (
        root_id INTEGER PRIMARY KEY,
        terms TEXT NOT NULL,    -- JSON {term: raw count}
        files TEXT NOT NULL,    -- JSON {path: count}, in insertion order
        symbols TEXT NOT NULL,  -- JSON {name: count}, in insertion order
        tokens INTEGER NOT NULL,
        first_time REAL NOT NULL,
        last_time REAL NOT NULL,
        rev INTEGER NOT NULL
    );
    CREATE INDEX centroids_rev ON centroids (rev);
    CREATE TABLE doc_freq (
        term TEXT PRIMARY KEY,
        df INTEGER NOT NULL,  -- documents containing the term
        idf REAL NOT NULL,    -- its weight as of the writer's last IDF refresh
        rev INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX doc_freq_rev ON doc_freq (rev);
    CREATE TABLE summaries (
        root_id INTEGER PRIMARY KEY,
        text TEXT NOT NULL,
        version INTEGER NOT NULL,  -- the topic version it was made from (-1: partial)
        covered TEXT NOT NULL,     -- JSON [member ids it summarizes]
        tokens INTEGER NOT NULL,
        model TEXT NOT NULL,
        rev INTEGER NOT NULL
    );
    CREATE TABLE spend (
        root_id INTEGER PRIMARY KEY,
        calls INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        rev INTEGER NOT NULL
    );
    CREATE TABLE pending (
        message_id INTEGER PRIMARY KEY,  -- a member no summary covers yet
        terms TEXT NOT NULL,             -- JSON {term: count}
        rev INTEGER NOT NULL
    );
    CREATE INDEX pending_rev ON pending (rev);
    INSERT INTO meta (key, value) VALUES
        ('rev', 0), ('next_message_id', 1), ('n_docs', 0), ('next_order', 0),
        ('df_generation', 0), ('docs_at_epoch', 0),
        ('fallback_summary', NULL);
    """,
    # 2: the hot zones' messages (no topic yet) are a few dozen rows among thousands; a window
    # loading another's commits reads them by this index instead of scanning whole threads.
    """
    CREATE INDEX messages_hot ON messages (thread_id, id) WHERE root_id IS NULL;
    """,
    # 3: what a chat turn attached from the editor, per user message: the reference the
    # history shows and exactly the text the request carried (never in the message itself,
    # so topics and summaries do not fill with file copies); and a count of deletions
    # (deleteThread), on whose change other windows reload their memory whole.
    """
    CREATE TABLE attachments (
        message_id INTEGER NOT NULL,
        position INTEGER NOT NULL,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        start_line INTEGER,
        end_line INTEGER,
        language TEXT,
        sha256 TEXT NOT NULL,  -- of the text the editor had
        tokens INTEGER NOT NULL,  -- of what was sent
        truncated INTEGER NOT NULL,
        text TEXT NOT NULL,  -- what was sent (a truncation marker included)
        rev INTEGER NOT NULL,
        PRIMARY KEY (message_id, position)
    );
    INSERT OR IGNORE INTO meta (key, value) VALUES ('deletions', 0);
    """,
    # 4: threads are per person in a team memory; '' = written before owners were recorded
    # (shown to everyone, as before).
    """
    ALTER TABLE threads ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def _tighten(directory: Path) -> None:
    """A store directory others can write to is made 0700: they could replace the database
    (chat content) or plant files beside it."""
    mode = stat.S_IMODE(directory.stat().st_mode)
    if mode & 0o022:
        directory.chmod(0o700)
        log.warning("memory store directory %s was mode %o; made it 0700", directory, mode)


def connect(path: Path, *, max_pages: int | None = None) -> sqlite3.Connection:
    """Open (creating if needed) the store at `path`, checked, configured and migrated."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _tighten(path.parent)
        # Create the file ourselves so it is 0600 from the first byte; SQLite gives the -wal and
        # -shm files the database file's mode.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError as exc:
        raise StoreError(f"cannot create the memory database {path}: {exc.strerror}") from exc
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the memory database {path}: {exc}") from exc
    try:
        _check_and_migrate(conn, path)
        if max_pages is not None:  # a size cap (tests use it to simulate a full disk)
            conn.execute(f"PRAGMA max_page_count = {int(max_pages)}")
    except BaseException:
        conn.close()
        raise
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open the existing store at `path` for reading only (SQLite refuses every write on the
    connection): nothing is created, tightened, switched or migrated. StoreError if there is no
    store there, or one this version cannot read as it is."""
    if not path.is_file():
        raise StoreError(f"no memory stored at {path}")
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=10.0,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the memory database {path}: {exc}") from exc
    try:
        version = _check(conn, path)
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"{path} has schema {version}, this Topic Forest reads {SCHEMA_VERSION}: open the "
                "workspace in the editor once (it upgrades the memory), then try again"
            )
        conn.execute("PRAGMA busy_timeout = 10000")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            raise StoreError(f"{path} is not in WAL mode (got {mode}); open it in the editor once")
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot read the memory database {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _check(conn: sqlite3.Connection, path: Path) -> int:
    """The schema version of our database at `path`; StoreError if it is not ours to open."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a Topic Forest memory database ({exc})") from exc
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
        raise StoreError(f"{path} is another application's SQLite database; not touching it")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer Topic Forest (schema {version}, this one knows "
            f"{SCHEMA_VERSION}); upgrade Topic Forest to open it"
        )
    return version


def _check_and_migrate(conn: sqlite3.Connection, path: Path) -> None:
    version = _check(conn, path)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            raise StoreError(f"cannot switch {path} to WAL mode (got {mode})")
        # Commits reach the OS at once (a killed process loses nothing); `Store.sync` puts them
        # on disk before anything is acknowledged, once per acknowledgement, not per commit.
        conn.execute("PRAGMA synchronous = NORMAL")
        if version < SCHEMA_VERSION:
            _migrate(conn, version)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot prepare the memory database {path}: {exc}") from exc


def _migrate(conn: sqlite3.Connection, version: int) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Another process may have migrated while we waited for the write lock.
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        for index in range(current, SCHEMA_VERSION):
            for statement in _statements(MIGRATIONS[index]):
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit our transaction)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
