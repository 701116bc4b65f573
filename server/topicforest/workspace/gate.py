"""The send gate: upkeep waits while a chat turn is between receipt and its request leaving.

A turn's synchronous path (append, render, send) must never share the loop with upkeep's work
(graduation, re-clustering, summary commits): upkeep waits on the gate before each round, so its
work overlaps the model's answer instead. It waits at most `SEND_GATE_SECONDS`: a turn stuck
before its first byte (an endpoint that never accepts) does not stop topics from forming.

While any turn of the process is sending, automatic garbage collection is off (`_Collector`):
a collection falling due there cost a turn of the first seconds 15-40 ms (what was loaded since
the last `gc.freeze` is scanned). Upkeep collects explicitly after its rounds instead.

The CPUs are the machine's, not the process's: several windows on one machine (one memory
shared through SQLite, or a team's on PostgreSQL) each run upkeep, and each commit of one sets
all the others reloading at once. So a turn also holds `MachineTurns`, and upkeep and reloads
wait, as briefly as `MACHINE_GATE_SECONDS` at most, while a turn of another of this user's
servers on this machine is between receipt and send.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import logging
import os
import struct
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)
SEND_GATE_SECONDS = 1.0
# Another server's turn holds our upkeep this long at most: a turn is milliseconds, and several
# windows chatting back to back must not stop each other's topics from forming.
MACHINE_GATE_SECONDS = 0.05
MACHINE_POLL_SECONDS = 0.001


class _Collector:
    """Automatic collection off while at least one turn of the process is sending."""

    def __init__(self) -> None:
        self.holders = 0
        self.was_enabled = True

    def hold(self) -> None:
        if not self.holders:
            self.was_enabled = gc.isenabled()
            gc.disable()
        self.holders += 1

    def release(self) -> None:
        self.holders -= 1
        if not self.holders and self.was_enabled:
            gc.enable()


COLLECTOR = _Collector()  # one per process: gc is

_FLOCK = "hhqqi4x"  # struct flock: type, whence, start, len, pid (0 for an OFD lock)


class MachineTurns:
    """Whether a chat turn of any of this user's servers on this machine is sending.

    Each sending process holds a read lock on a shared file; a write lock that could not be
    placed means someone is sending. Open-file-description locks (Linux): the kernel drops a
    killed process's, and asking costs one system call, takes nothing and so never makes a turn
    wait. Where they are missing or the file cannot be opened, nobody is ever seen sending (the
    in-process gate still works)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.holders = 0
        self._held: int | None = None  # the descriptor whose read lock says "sending"
        self._probe: int | None = None  # a second one, whose write lock would conflict
        if not hasattr(fcntl, "F_OFD_GETLK"):
            return
        flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            held = os.open(path, flags | os.O_CREAT, 0o600)
            if os.fstat(held).st_uid != os.getuid():  # planted by someone else: not ours to use
                os.close(held)
                raise PermissionError(f"{path} belongs to another user")
            self._held, self._probe = held, os.open(path, flags)
        except OSError as exc:
            log.debug("no machine-wide send gate at %s: %s", path, exc)

    def hold(self) -> None:
        if not self.holders:
            self._lock(self._held, fcntl.F_RDLCK)
        self.holders += 1

    def release(self) -> None:
        self.holders -= 1
        if not self.holders:
            self._lock(self._held, fcntl.F_UNLCK)

    def busy(self) -> bool:
        """A turn of this or another server on this machine is between receipt and send."""
        if self._probe is None:
            return False
        try:
            found = fcntl.fcntl(self._probe, fcntl.F_OFD_GETLK, _flock(fcntl.F_WRLCK))
        except OSError:
            return False
        kind: int = struct.unpack(_FLOCK, found)[0]
        return kind != fcntl.F_UNLCK

    @staticmethod
    def _lock(fd: int | None, kind: int) -> None:
        if fd is not None:
            try:  # never blocks: only reads are ever placed, and unlocking cannot conflict
                fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(kind))
            except OSError as exc:
                log.debug("machine-wide send gate: %s", exc)


def _flock(kind: int) -> bytes:
    return struct.pack(_FLOCK, kind, os.SEEK_SET, 0, 1, 0)


_machine: MachineTurns | None = None


def machine_turns() -> MachineTurns:
    """This process's view of the machine's turns: one file per user, in the user's runtime
    directory (`XDG_RUNTIME_DIR`) or else the temporary one."""
    global _machine
    if _machine is None:
        base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
        _machine = MachineTurns(Path(base) / f"topicforest-{os.getuid()}.sending")
    return _machine


class SendGate:
    def __init__(self, machine: MachineTurns | None = None) -> None:
        self._open = asyncio.Event()  # set while no turn is between receipt and send
        self._open.set()
        self._sending = 0
        self.machine = machine or machine_turns()

    @property
    def is_open(self) -> bool:
        """No turn of this process is between receipt and send."""
        return self._open.is_set()

    @property
    def is_quiet(self) -> bool:
        """No turn of any of this user's servers on this machine is."""
        return self._open.is_set() and not self.machine.busy()

    def enter(self) -> None:
        """A turn was received; its request has not left yet."""
        self._sending += 1
        self._open.clear()
        COLLECTOR.hold()
        self.machine.hold()

    def leave(self) -> None:
        """A turn's request left (or the turn ended before it could)."""
        self._sending -= 1
        COLLECTOR.release()
        self.machine.release()
        if not self._sending:
            self._open.set()

    async def wait(self, timeout: float = SEND_GATE_SECONDS) -> bool:
        """Until no turn of ours is sending (or `timeout`), then until none of the machine's
        other servers is (or `MACHINE_GATE_SECONDS`); whether our gate opened."""
        deadline = time.monotonic() + MACHINE_GATE_SECONDS
        while True:
            try:
                async with asyncio.timeout(timeout):
                    await self._open.wait()
            except TimeoutError:
                log.debug("a chat request has not left after %g s", timeout)
                return False
            if time.monotonic() >= deadline or not self.machine.busy():
                return True
            await asyncio.sleep(MACHINE_POLL_SECONDS)  # then ours first, if one came meanwhile
