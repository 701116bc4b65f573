"""The JSON-RPC channel on stdio and the stderr log, set up before pygls is loaded.

`protect_stdout` keeps stray output out of JSON-RPC frames; `setup_stderr_logging` sends every
log record to stderr (editors show it as the server's output). `logbridge` adds the client side.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import BinaryIO

from topicforest.memory import redact


class RedactingFormatter(logging.Formatter):
    """API keys from the environment never reach a log line."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The server's stderr log (its own class so that setting it up twice adds it once)."""


def setup_stderr_logging(level: int = logging.INFO) -> None:
    """stderr for everything (pygls and litellm quietened), `level` for our own loggers."""
    root = logging.getLogger()
    if not any(isinstance(h, StderrHandler) for h in root.handlers):
        stderr = StderrHandler(sys.stderr)
        stderr.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(stderr)
    root.setLevel(logging.WARNING)
    # pygls logs each message body at INFO (chat text included); keep that out of the logs.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    logging.getLogger("topicforest").setLevel(level)


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
