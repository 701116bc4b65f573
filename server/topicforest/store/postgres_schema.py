"""The team memory's tables in PostgreSQL, as versioned migrations: `PostgresBackend` applies
them to a memory's schema, the read-only backend only checks its version."""

from __future__ import annotations

# Schema version i + 1 = MIGRATIONS[i]. Version 1 is SQLite's schemas 1, 2 and 4, in PostgreSQL
# types: DOUBLE PRECISION for REAL (SQLite's REAL is 8 bytes), BOOLEAN for the roots' flags,
# TEXT for meta values (SQLite's column is untyped; readers convert).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE messages (
        id BIGINT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        content TEXT NOT NULL,
        timestamp DOUBLE PRECISION NOT NULL,
        tokens INTEGER NOT NULL,
        cancelled INTEGER NOT NULL DEFAULT 0,
        root_id BIGINT,
        pos INTEGER,
        terms TEXT,
        rev BIGINT NOT NULL
    );
    CREATE INDEX messages_rev ON messages (rev);
    CREATE INDEX messages_thread ON messages (thread_id, id);
    CREATE INDEX messages_root ON messages (root_id, pos) WHERE root_id IS NOT NULL;
    CREATE INDEX messages_hot ON messages (thread_id, id) WHERE root_id IS NULL;
    CREATE TABLE threads (
        thread_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        first_time DOUBLE PRECISION NOT NULL,
        last_time DOUBLE PRECISION NOT NULL,
        message_count INTEGER NOT NULL,
        last_planted BIGINT,
        owner TEXT NOT NULL DEFAULT '',
        rev BIGINT NOT NULL
    );
    CREATE INDEX threads_owner ON threads (owner, last_time);
    CREATE TABLE roots (
        id BIGINT PRIMARY KEY,
        ord BIGINT NOT NULL,
        version BIGINT NOT NULL,
        size INTEGER NOT NULL,
        dropped BOOLEAN NOT NULL,
        pinned BOOLEAN NOT NULL,
        expanded BOOLEAN NOT NULL,
        rev BIGINT NOT NULL
    );
    CREATE TABLE centroids (
        root_id BIGINT PRIMARY KEY,
        terms TEXT NOT NULL,
        files TEXT NOT NULL,
        symbols TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        first_time DOUBLE PRECISION NOT NULL,
        last_time DOUBLE PRECISION NOT NULL,
        rev BIGINT NOT NULL
    );
    CREATE INDEX centroids_rev ON centroids (rev);
    CREATE TABLE doc_freq (
        term TEXT PRIMARY KEY,
        df INTEGER NOT NULL,
        idf DOUBLE PRECISION NOT NULL,
        rev BIGINT NOT NULL
    );
    CREATE INDEX doc_freq_rev ON doc_freq (rev);
    CREATE TABLE summaries (
        root_id BIGINT PRIMARY KEY,
        text TEXT NOT NULL,
        version BIGINT NOT NULL,
        covered TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        model TEXT NOT NULL,
        rev BIGINT NOT NULL
    );
    CREATE TABLE spend (
        root_id BIGINT PRIMARY KEY,
        calls INTEGER NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        rev BIGINT NOT NULL
    );
    CREATE TABLE pending (
        message_id BIGINT PRIMARY KEY,
        terms TEXT NOT NULL,
        rev BIGINT NOT NULL
    );
    CREATE INDEX pending_rev ON pending (rev);
    INSERT INTO meta (key, value) VALUES
        ('rev', '0'), ('next_message_id', '1'), ('n_docs', '0'), ('next_order', '0'),
        ('df_generation', '0'), ('docs_at_epoch', '0'), ('fallback_summary', NULL);
    """,
    # 2 = SQLite's 3: chat attachments (reference + the text sent) and the deletions counter
    """
    CREATE TABLE attachments (
        message_id BIGINT NOT NULL,
        position INTEGER NOT NULL,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        start_line INTEGER,
        end_line INTEGER,
        language TEXT,
        sha256 TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        truncated INTEGER NOT NULL,
        text TEXT NOT NULL,
        rev BIGINT NOT NULL,
        PRIMARY KEY (message_id, position)
    );
    INSERT INTO meta (key, value) VALUES ('deletions', '0') ON CONFLICT (key) DO NOTHING;
    """,
    # 3: appends without the writer lock: message ids from a sequence (continuing the meta
    # counter, which is no longer used) and the append counter other windows watch
    """
    CREATE SEQUENCE message_ids;
    SELECT setval('message_ids', GREATEST(
        (SELECT CAST(value AS BIGINT) FROM meta WHERE key = 'next_message_id'),
        (SELECT COALESCE(max(id), 0) + 1 FROM messages), 1), false);
    INSERT INTO meta (key, value) VALUES ('appends', '0') ON CONFLICT (key) DO NOTHING;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
