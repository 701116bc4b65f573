"""The send gate: upkeep waits while a chat turn is between receipt and its request leaving.

A turn's synchronous path (append, render, send) must never share the loop with upkeep's work
(graduation, re-clustering, summary commits): upkeep waits on the gate before each round, so its
work overlaps the model's answer instead. It waits at most `SEND_GATE_SECONDS`: a turn stuck
before its first byte (an endpoint that never accepts) does not stop topics from forming.

While any turn of the process is sending, automatic garbage collection is off (`_Collector`):
a collection falling due there cost a turn of the first seconds 15-40 ms (what was loaded since
the last `gc.freeze` is scanned). Upkeep collects explicitly after its rounds instead.
"""

from __future__ import annotations

import asyncio
import gc
import logging

log = logging.getLogger(__name__)
SEND_GATE_SECONDS = 1.0


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


class SendGate:
    def __init__(self) -> None:
        self._open = asyncio.Event()  # set while no turn is between receipt and send
        self._open.set()
        self._sending = 0

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    def enter(self) -> None:
        """A turn was received; its request has not left yet."""
        self._sending += 1
        self._open.clear()
        COLLECTOR.hold()

    def leave(self) -> None:
        """A turn's request left (or the turn ended before it could)."""
        self._sending -= 1
        COLLECTOR.release()
        if not self._sending:
            self._open.set()

    async def wait(self, timeout: float = SEND_GATE_SECONDS) -> bool:
        """Until no turn is sending, or `timeout`; whether the gate opened."""
        try:
            async with asyncio.timeout(timeout):
                await self._open.wait()
        except TimeoutError:
            log.debug("a chat request has not left after %g s", timeout)
            return False
        return True
