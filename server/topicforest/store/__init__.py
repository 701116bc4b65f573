"""Persistent workspace memory: SQLite store, maintenance lease and change watcher."""

from topicforest.store.errors import StoreError
from topicforest.store.lease import Lease
from topicforest.store.message_logs import SqliteMessageLog
from topicforest.store.paths import default_store_dir, store_path, workspace_key
from topicforest.store.store import Store, ThreadRow
from topicforest.store.stored_window import StoredWindow

__all__ = [
    "Lease",
    "SqliteMessageLog",
    "Store",
    "StoreError",
    "StoredWindow",
    "ThreadRow",
    "default_store_dir",
    "store_path",
    "workspace_key",
]
