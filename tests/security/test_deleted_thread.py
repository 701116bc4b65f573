"""A thread deleted while a turn streams into it stays deleted: the reply arriving after the
delete (from this window, as the VS Code client does, or from another window on the same store)
is not stored, so no orphan reply brings the thread back and graduates into topics."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from topicforest.workspace.memory import WorkspaceMemory
from topicforest.workspace.settings import Settings

HANG = 120  # seconds: bounds a hang only


class HeldStream:
    """An OpenAI-compatible endpoint whose reply stops after its first chunk until released."""

    def __init__(self) -> None:
        self.released = asyncio.Event()
        self.url = ""

    async def completions(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunk = b'data: {"choices": [{"delta": {"content": "%s"}, "finish_reason": %s}]}\n\n'
        await response.write(chunk % (b"The ", b"null"))
        await self.released.wait()
        await response.write(chunk % (b"WAL mode.", b'"stop"'))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


@pytest.fixture
async def held() -> AsyncIterator[HeldStream]:
    stream = HeldStream()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", stream.completions)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    stream.url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    try:
        yield stream
    finally:
        stream.released.set()
        await runner.cleanup()


def _memory(folder: Path, url: str) -> WorkspaceMemory:
    settings = Settings(chat_model="openai/held", api_base=url, store_path=str(folder / ".store"))
    memory = WorkspaceMemory(folder.as_uri(), settings)
    memory.start()
    return memory


@pytest.mark.parametrize("deleter", ["this window", "another window"])
async def test_a_thread_deleted_mid_reply_stays_deleted(
    tmp_path: Path, held: HeldStream, deleter: str
) -> None:
    memory = _memory(tmp_path, held.url)
    other = _memory(tmp_path, held.url) if deleter == "another window" else memory
    try:
        memory.append("t", "user", "An earlier question about the pool size.")
        first = asyncio.Event()
        turn = asyncio.ensure_future(
            memory.chat("t", "1", "What is WAL?", on_delta=lambda i, d: first.set())
        )
        await asyncio.wait_for(first.wait(), HANG)  # the reply is streaming
        other.refresh()
        assert other.delete_thread("t") == 2
        held.released.set()
        outcome = await asyncio.wait_for(turn, HANG)
        assert outcome.reply == "The WAL mode." and outcome.reply_message is None
        for window in {memory, other}:
            window.refresh()
            assert window.history("t") == []
            assert "t" not in [t.thread_id for t in window.threads()]
            assert window.message_count() == 0  # no orphan reply left to graduate
    finally:
        for window in {memory, other}:
            await window.close()
