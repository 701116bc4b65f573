"""The stdin reader pygls' message loop uses: pipes read in the event loop, files by a thread."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from topicforest.server.stdio import MAX_LINE, PipeReader


async def test_an_overlong_line_is_dropped_and_reading_goes_on() -> None:
    read_end, write_end = os.pipe()
    with open(read_end, "rb", buffering=0) as stdin:
        reader = PipeReader(stdin)
        line = b"x" * (MAX_LINE + 10) + b"\r\nContent-Length: 2\r\n"  # more than a pipe holds
        writing = asyncio.create_task(asyncio.to_thread(os.write, write_end, line))
        assert await reader.readline() == b"(overlong line dropped)\r\n"
        await writing
        assert await reader.readline() == b"Content-Length: 2\r\n"
        os.write(write_end, b"\r\n{")
        os.close(write_end)
        assert await reader.readline() == b"\r\n"
        assert await reader.readexactly(2) == b"{"  # the client left mid-frame: what came
        assert await reader.readline() == b""


async def test_a_regular_file_is_read_too(tmp_path: Path) -> None:
    path = tmp_path / "frames"
    path.write_bytes(b"Length: 1\r\n\r\nz")
    with path.open("rb", buffering=0) as stdin:
        reader = PipeReader(stdin, b"Content-")
        assert await reader.readline() == b"Content-Length: 1\r\n"
        assert await reader.readline() == b"\r\n"
        assert await reader.readexactly(1) == b"z"
        assert await reader.readline() == b""
