"""Logs to the client as window/logMessage (stderr and the stdio channel: see `stdio`).

Only the `topicforest` logger tree is bridged: pygls logs every message it sends, so bridging its
loggers would send a logMessage about sending a logMessage, forever. A thread-local guard stops
any other loop. Everything else goes to stderr, which editors show as the server's output.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterable

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from topicforest.server.stdio import (
    SENT_TO_CLIENT,
    RedactingFormatter,
    setup_stderr_logging,
    to_stderr,
)

LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}


class LogBridge(logging.Handler):
    def __init__(self, server: LanguageServer, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.server = server
        self.loop: asyncio.AbstractEventLoop | None = None
        self.backlog: list[logging.LogRecord] = []  # logged before pygls was loaded (`early`)
        self._guard = threading.local()
        self.setFormatter(RedactingFormatter("%(name)s: %(message)s"))

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The server's loop is running (`initialized`): send the backlog, then live records."""
        self.loop = loop
        backlog, self.backlog = self.backlog, []
        for record in backlog:  # held back from stderr (`early.Backlog`)
            setattr(record, SENT_TO_CLIENT, False)
            self.handle(record)
            if not getattr(record, SENT_TO_CLIENT):
                to_stderr(record)

    def spill(self) -> None:
        """The client never said `initialized`: the held backlog goes to stderr after all."""
        backlog, self.backlog = self.backlog, []
        for record in backlog:
            to_stderr(record)

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._guard, "active", False) or self.server.protocol.writer is None:
            return
        self._guard.active = True
        try:
            kind = next((t for lvl, t in LEVELS.items() if record.levelno >= lvl), None)
            params = types.LogMessageParams(
                type=kind or types.MessageType.Log, message=self.format(record)
            )
            if self._send(params):
                setattr(record, SENT_TO_CLIENT, True)  # so stderr does not repeat it
        except Exception:
            self.handleError(record)
        finally:
            self._guard.active = False

    def _send(self, params: types.LogMessageParams) -> bool:
        """Send (or hand to the loop for sending); False if it cannot reach the client."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a worker thread: hand over to the loop, never write from here
            if self.loop is None:
                return False  # before `initialized` the loop is unknown; stderr has the record
            self.loop.call_soon_threadsafe(self.server.window_log_message, params)
            return True
        self.server.window_log_message(params)
        return True


def setup_logging(
    server: LanguageServer,
    level: int = logging.INFO,
    backlog: Iterable[logging.LogRecord] = (),
) -> LogBridge:
    """stderr for everything, the client for our own logs (`backlog`: sent once initialized)."""
    setup_stderr_logging(level)
    bridge = LogBridge(server, level)
    bridge.backlog = list(backlog)
    logging.getLogger("topicforest").addHandler(bridge)
    return bridge
