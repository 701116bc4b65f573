"""LSP framing that resynchronises: a bad frame costs that frame, never the session.

Both readers of stdin use it: `early` (before pygls is loaded) and `Dispatcher` in the pygls
loop. pygls' own reader expects `Content-Length: N\\r\\n` exactly and, after one wrong length,
reads every later header glued to the previous body and never matches again.

Resynchronising relies on one fact: a `Content-Length: <digits>` line ending in a raw line
break can never occur inside a valid JSON body (raw CR and LF appear in JSON only as whitespace
between tokens, and no token starts with a letter C). So whenever one appears where a body or a
header was expected, whatever precedes it is skipped (and logged) and reading starts again there.
Header names are read case-insensitively and LF-only line ends are accepted.

Also here, shared by both readers: `decode` (a frame's body to a message, or the JSON-RPC error
for it) and `Gate`, the LSP lifecycle rules (nothing before `initialize`, nothing after
`shutdown`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MAX_HEADER_LINE = 8192  # bytes; a header line longer than this is not LSP framing
MAX_BODY = 64 * 1024 * 1024  # bytes; a longer Content-Length is refused
KEEP_TAIL = 32  # bytes kept from skipped input: a header may start in them

HEADER_START = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
RESYNC = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
HEADER_LINE = re.compile(rb"([A-Za-z][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*?)[ \t]*\r?")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002  # LSP's code (the custom UnknownWorkspace shares it)


@dataclass(frozen=True)
class Frame:
    body: bytes
    raw: bytes  # header and body as received (`early` replays some frames to pygls)


@dataclass(frozen=True)
class Skipped:
    """Input that is not a frame; the reader logs it and reads on."""

    data: bytes
    reason: str

    def describe(self) -> str:
        sample = self.data[:80]
        more = "…" if len(self.data) > len(sample) else ""
        return f"skipped {len(self.data)} bytes of input ({self.reason}): {sample!r}{more}"


class FrameParser:
    """Feed bytes in, take frames and skipped runs out (`next`), in order."""

    def __init__(self, data: bytes = b"") -> None:
        self.buffer = bytearray(data)
        self._pos = 0  # how far the header block has been read
        self._length: int | None = None  # Content-Length of the block, once read
        self._problem = ""  # why the block is unusable, if it is
        self._body: int | None = None  # offset of the body once the headers ended

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def pending(self) -> bytes:
        """What was fed but not yet returned (the start of an incomplete frame)."""
        return bytes(self.buffer)

    def next(self) -> Frame | Skipped | None:
        """The next frame or skipped run; None until more input arrives."""
        while True:
            if self._body is not None:
                return self._next_body()
            item = self._next_header_line()
            if not isinstance(item, bool):
                return item

    def close(self) -> Skipped | None:
        """At end of input: what is left is an incomplete frame."""
        if not self.buffer:
            return None
        left = Skipped(bytes(self.buffer), "input ended inside a frame")
        self._reset(len(self.buffer))
        return left

    # -- internals ---------------------------------------------------------------------------
    def _reset(self, consumed: int) -> None:
        del self.buffer[:consumed]
        self._pos = 0
        self._length, self._problem, self._body = None, "", None

    def _skip(self, end: int, reason: str) -> Skipped:
        skipped = Skipped(bytes(self.buffer[:end]), reason)
        self._reset(end)
        return skipped

    def _next_header_line(self) -> Frame | Skipped | bool | None:
        """One header line handled: False to go on, else what `next` returns."""
        buffer = self.buffer
        end = buffer.find(b"\n", self._pos)
        if end < 0:
            if len(buffer) - self._pos <= MAX_HEADER_LINE:
                return None
            match = HEADER_START.search(buffer, self._pos + 1)
            cut = match.start() if match else len(buffer) - KEEP_TAIL
            return self._skip(cut, "over-long header line")
        line = bytes(buffer[self._pos : end])
        match = HEADER_START.search(line)
        if match is not None and match.start() > 0:  # e.g. the rest of a body cut short
            return self._skip(self._pos + match.start(), "not a header")
        header = HEADER_LINE.fullmatch(line) if len(line) <= MAX_HEADER_LINE else None
        if header is None:
            if not line.strip(b"\r"):  # the blank line ending the headers
                return self._end_of_headers(end + 1)
            return self._skip(end + 1, "not a header")
        if header.group(1).lower() == b"content-length":
            self._content_length(header.group(2))
        self._pos = end + 1
        return False

    def _content_length(self, value: bytes) -> None:
        if self._length is not None or self._problem:
            self._problem = "two Content-Length headers"
        elif not value.isdigit():
            self._problem = f"Content-Length {value[:20]!r} is not a number"
        elif not 0 < int(value) <= MAX_BODY:
            self._problem = f"Content-Length {int(value)} is out of range"
        else:
            self._length = int(value)

    def _end_of_headers(self, body: int) -> Skipped | bool:
        if self._problem or self._length is None:
            return self._skip(body, self._problem or "headers without Content-Length")
        self._body = body
        return False

    def _next_body(self) -> Frame | Skipped | None:
        assert self._body is not None and self._length is not None
        end = self._body + self._length
        resync = RESYNC.search(self.buffer, self._body)
        if resync is not None and resync.start() < end:
            return self._skip(resync.start(), "a new frame began inside this one's body")
        if len(self.buffer) < end:
            return None
        found = Frame(bytes(self.buffer[self._body : end]), bytes(self.buffer[:end]))
        self._reset(end)
        return found


# -- messages ----------------------------------------------------------------------------------
class BadMessage(Exception):
    """A body that cannot be served: `reply` is the JSON-RPC error response to send."""

    def __init__(self, code: int, message: str, msg_id: Any = None) -> None:
        super().__init__(message)
        self.reply = error_reply(msg_id, code, message)


def error_reply(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def decode(body: bytes) -> dict[str, Any]:
    """A frame's body as a JSON-RPC message object; BadMessage for anything else."""
    try:
        message = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadMessage(PARSE_ERROR, f"the message is not UTF-8 ({exc.reason})") from exc
    except RecursionError as exc:
        raise BadMessage(PARSE_ERROR, "the message is nested too deeply") from exc
    except ValueError as exc:  # json.JSONDecodeError, and integers over 4,300 digits
        raise BadMessage(PARSE_ERROR, f"the message is not JSON ({str(exc)[:200]})") from exc
    if not isinstance(message, dict):
        raise BadMessage(INVALID_REQUEST, "a message must be a JSON object (batches are not LSP)")
    msg_id = message.get("id")
    if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, int | str)):
        raise BadMessage(INVALID_REQUEST, "id must be a string, an integer or null")
    if message.get("jsonrpc") != "2.0":
        raise BadMessage(INVALID_REQUEST, 'jsonrpc must be "2.0"', msg_id)
    if "method" in message and not isinstance(message["method"], str):
        raise BadMessage(INVALID_REQUEST, "method must be a string", msg_id)
    if "method" not in message and "id" not in message:
        raise BadMessage(INVALID_REQUEST, "neither a request, a notification nor a response")
    return message


class Gate:
    """The LSP lifecycle: before `initialize` only it (and `exit`) is served; after `shutdown`
    only `exit`. `check` raises BadMessage for a request refused here (a refused notification
    is dropped: `check` returns False)."""

    def __init__(self) -> None:
        self.initialized = False
        self.shut_down = False

    def check(self, message: dict[str, Any]) -> bool:
        method = message.get("method")
        if method is None or method == "exit":  # responses, and exit, always pass
            return True
        request = "id" in message
        if self.shut_down:
            if request:
                raise BadMessage(INVALID_REQUEST, "the server is shutting down", message["id"])
            return False
        if not self.initialized:
            if method == "initialize" and request:
                self.initialized = True
                return True
            if request:
                raise BadMessage(
                    SERVER_NOT_INITIALIZED, "the server is not initialized yet", message["id"]
                )
            return False
        if method == "initialize" and request:
            raise BadMessage(INVALID_REQUEST, "initialize was already received", message["id"])
        if method == "shutdown" and request:
            self.shut_down = True
        return True
