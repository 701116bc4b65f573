"""Logs to the client (window/logMessage) and a stdout that stray prints cannot corrupt.

Only the `topicforest` logger tree is bridged: pygls logs every message it sends, so bridging its
loggers would send a logMessage about sending a logMessage, forever. A thread-local guard stops
any other loop. Everything also goes to stderr, which editors show as the server's output.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from typing import BinaryIO

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from topicforest.memory import redact

LEVELS = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}


class RedactingFormatter(logging.Formatter):
    """API keys from the environment never reach a log line."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class LogBridge(logging.Handler):
    def __init__(self, server: LanguageServer, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.server = server
        self.loop: asyncio.AbstractEventLoop | None = None
        self._guard = threading.local()
        self.setFormatter(RedactingFormatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._guard, "active", False) or self.server.protocol.writer is None:
            return
        self._guard.active = True
        try:
            kind = next((t for lvl, t in LEVELS.items() if record.levelno >= lvl), None)
            params = types.LogMessageParams(
                type=kind or types.MessageType.Log, message=self.format(record)
            )
            self._send(params)
        except Exception:
            self.handleError(record)
        finally:
            self._guard.active = False

    def _send(self, params: types.LogMessageParams) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a worker thread: hand over to the loop, never write from here
            if self.loop is not None:
                self.loop.call_soon_threadsafe(self.server.window_log_message, params)
            return  # before `initialized` the loop is unknown; stderr still has the record
        self.server.window_log_message(params)


def setup_logging(server: LanguageServer, level: int = logging.INFO) -> LogBridge:
    """stderr for everything (pygls quietened), the client for our own logs."""
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(stderr)
    root.setLevel(logging.WARNING)
    # pygls logs each message body at INFO (chat text included); keep that out of the logs.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    ours = logging.getLogger("topicforest")
    ours.setLevel(level)
    bridge = LogBridge(server, level)
    ours.addHandler(bridge)
    return bridge


def protect_stdout() -> tuple[BinaryIO, BinaryIO]:
    """(stdin, stdout) for JSON-RPC; fd 1 and sys.stdout then point at stderr.

    Any print(), C extension or child process writing to "stdout" lands on stderr instead of in
    the middle of a JSON-RPC frame.
    """
    rpc_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    rpc_out = os.fdopen(rpc_fd, "wb")
    return sys.stdin.buffer, rpc_out
