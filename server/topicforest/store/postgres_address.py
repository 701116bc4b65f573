"""Naming a team memory, without psycopg or a database: the `topicForest.storeUrl` it lives in
(settings check it as they are read) and its repository's key, which names the memory's schema,
NOTIFY channel and advisory locks (the backend's and its lease's)."""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qs, urlsplit

SCHEMES = ("postgresql", "postgres")
WRITE_LOCK, LEASE_LOCK, MIGRATE_LOCK = 0x54460001, 0x54460002, 0x54460003  # "TF" + purpose


def check_url(url: str) -> str:
    """`url` if it is a PostgreSQL URL without a password; else ValueError saying why."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError("must be a postgresql://user@host:5432/database URL")
    if parts.password is not None or "password" in parse_qs(parts.query):
        raise ValueError(
            "must not contain a password: put it in the PGPASSWORD environment variable or "
            "~/.pgpass, never in settings"
        )
    if not parts.path.strip("/"):
        raise ValueError("must name a database (postgresql://user@host:5432/database)")
    return url


def memory_key(identity: str) -> str:
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]


def lock_id(key: str) -> int:
    return int(key[:8], 16) & 0x7FFFFFFF  # the objid half of a two-int advisory lock
