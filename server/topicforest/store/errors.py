"""The one exception type the store raises for anything the user or the disk did wrong."""

from __future__ import annotations


class StoreError(Exception):
    """The memory database cannot be opened, read or written; nothing was partially written."""
