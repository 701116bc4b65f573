"""The maintenance lease: an OS file lock beside the database, held by one process at a time.

flock locks belong to the open file, so the kernel releases the lease the moment its holder dies
(even by kill -9); a waiting process polls `try_acquire` and takes over.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from topicforest.store.errors import StoreError


class Lease:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lease if nobody holds it; returns whether this process holds it now."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot open the lease file {self.path}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"cannot lock {self.path}: {exc.strerror}") from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())  # for people wondering who holds it
        self._fd = fd
        return True

    def alive(self) -> bool:
        return self._fd is not None  # nothing but this process's exit takes an flock away

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the file drops the lock

    def holder_pid(self) -> int | None:
        try:
            text = self.path.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None
