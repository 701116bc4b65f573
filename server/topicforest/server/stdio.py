"""The JSON-RPC channel on stdio and the stderr log, set up before pygls is loaded.

`protect_stdout` keeps stray output out of JSON-RPC frames; `setup_stderr_logging` sends every
log record to stderr (editors show it as the server's output). `logbridge` adds the client side.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from typing import BinaryIO

from topicforest.workspace.redact import redact

SENT_TO_CLIENT = "topicforest_sent_to_client"  # set on a LogRecord by the log bridge
MAX_LINE = 1 << 16  # a header line longer than this is not LSP framing


class RedactingFormatter(logging.Formatter):
    """API keys from the environment never reach a log line."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The server's stderr log (its own class so that setting it up twice adds it once).

    Records the log bridge already sent to the client are left out: editors show the server's
    stderr and its window/logMessage in the same output channel, so each line appeared twice.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, SENT_TO_CLIENT, False) and bool(super().filter(record))


def to_stderr(record: logging.LogRecord) -> None:
    """Write a record the client did not get (held for it, then not sent) to stderr."""
    setattr(record, SENT_TO_CLIENT, False)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, StderrHandler):
            handler.handle(record)


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


class PipeReader:
    """stdin for pygls' message loop, read in the event loop (an asyncio pipe), `head` first.

    pygls' own reader hops to a worker thread for every header line and every body: from a
    client's write to the parsed message that measured p50 0.6 ms and p99 4–5 ms on the 2-core
    development machine, against 0.2 ms and 0.4–0.9 ms read here — time that every request,
    a chat turn's critical path included, used to wait (docs/architecture.md, "The chat turn").
    """

    def __init__(self, stdin: BinaryIO, head: bytes = b"") -> None:
        self.stdin = stdin
        self.head = head  # bytes already taken from stdin (early answers' replay)
        self._reader: asyncio.StreamReader | None = None

    async def readline(self) -> bytes:
        try:
            return await (await self._stream()).readline()
        except ValueError:  # over MAX_LINE: asyncio dropped it; pygls skips a line it can't use
            return b"(overlong line dropped)\r\n"

    async def read(self) -> bytes:
        """Whatever has arrived (at least a byte; b"" at the end of input)."""
        return await (await self._stream()).read(65536)

    async def readexactly(self, n: int) -> bytes:
        try:
            return await (await self._stream()).readexactly(n)
        except asyncio.IncompleteReadError as exc:  # the client went away mid-frame
            return exc.partial

    async def _stream(self) -> asyncio.StreamReader:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=MAX_LINE)
            reader.feed_data(self.head)
            try:
                await loop.connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(reader), self.stdin
                )
            except ValueError:  # a regular file, not a pipe: a thread reads it instead
                threading.Thread(target=self._pump, args=(loop, reader), daemon=True).start()
            self._reader = reader
        return self._reader

    def _pump(self, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
        while data := os.read(self.stdin.fileno(), 65536):
            loop.call_soon_threadsafe(reader.feed_data, data)
        loop.call_soon_threadsafe(reader.feed_eof)
