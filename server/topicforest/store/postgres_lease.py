"""The team memory's maintenance lease, PostgreSQL's `lease.Lease`: a session-level advisory
lock on a connection of its own, apart from the backend's sessions."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from topicforest.store.errors import StoreError
from topicforest.store.postgres_address import LEASE_LOCK

if TYPE_CHECKING:
    import psycopg

    from topicforest.store.postgres import PostgresBackend


class AdvisoryLease:
    """The maintenance lease: a session advisory lock held on a connection of its own.

    The server drops it when that session ends, however the holder died; `alive` notices a
    lease lost with its connection (a database restart) so the holder stops maintaining.
    """

    def __init__(self, backend: PostgresBackend) -> None:
        self._backend = backend
        self._raw: psycopg.Connection[Any] | None = None
        self._held = False

    @property
    def held(self) -> bool:
        return self._held

    def _session(self) -> psycopg.Connection[Any]:
        raw = self._raw
        if raw is None or raw.closed or raw.broken:
            self._drop()
            raw = self._raw = self._backend.connect("lease")
        return raw

    def try_acquire(self) -> bool:
        if self._held:
            return True
        backend = self._backend
        try:
            row = (
                self._session()
                .execute("SELECT pg_try_advisory_lock(%s, %s)", (LEASE_LOCK, backend.lock_id))
                .fetchone()
            )
        except backend.psycopg.Error as exc:
            self._drop()
            raise StoreError(backend.describe(exc)) from exc
        self._held = bool(row and row[0])
        return self._held

    def alive(self) -> bool:
        if not self._held:
            return False
        try:
            self._session().execute("SELECT 1")
        except self._backend.psycopg.Error:
            self._drop()  # the session, and the lock with it, is gone
        return self._held

    def release(self) -> None:
        self._drop()  # ending the session releases the lock

    def _drop(self) -> None:
        raw, self._raw, self._held = self._raw, None, False
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.close()

    def holder_pid(self) -> int | None:
        """The process id in the holder's application name (on its own machine)."""
        backend = self._backend
        try:
            row = (
                self._session()
                .execute(
                    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a"
                    " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
                    " AND l.classid = %s AND l.objid = %s AND l.objsubid = 2",
                    (LEASE_LOCK, backend.lock_id),
                )
                .fetchone()
            )
        except backend.psycopg.Error:
            return None
        parts = (row[0] or "").split(":") if row else []
        return int(parts[2]) if len(parts) >= 3 and parts[2].isdigit() else None
