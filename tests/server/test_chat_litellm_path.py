"""The chat turn on the litellm path (a provider we do not stream from ourselves) answers like
the direct path: a cut, garbage or failing stream is an error (-32004) with the partial reply
kept, marked cancelled; never a complete reply. And its first-byte timeout holds."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from tests.server.conftest import Client
from topicforest.engine import ContextWindow
from topicforest.engine.config import WindowConfig
from topicforest.server.protocol import PROVIDER_ERROR
from topicforest.testing.stub_llm import STUB_API_KEY, StubLLM, ThreadedStubLLM
from topicforest.workspace.chat_model import ChatModel
from topicforest.workspace.errors import ProviderError
from topicforest.workspace.llm_worker import WorkerError
from topicforest.workspace.memory import WorkspaceMemory
from topicforest.workspace.settings import Settings

LITELLM = "custom_openai/stub-chat"  # the stub, reached through litellm in the worker process


@pytest.mark.parametrize("fault", ["eof", "broken_sse", "malformed", "status"])
async def test_a_bad_stream_is_an_error_with_the_partial_reply_cancelled(
    chat_client: Client, stub: ThreadedStubLLM, fault: str
) -> None:
    stub.script("The WAL mode keeps readers and the writer apart, and the checkpoint runs.")
    stub.fail_kind("chat", fault)  # type: ignore[arg-type]
    error = await chat_client.rpc_error(
        "chat", {"threadId": "t", "turnId": "1", "message": "What is WAL?", "model": LITELLM}
    )
    assert error.code == PROVIDER_ERROR, error
    assert LITELLM in error.message
    history = (await chat_client.call("threadHistory", {"threadId": "t"}))["messages"]
    assert history[0]["role"] == "user"
    assert all(m["cancelled"] for m in history if m["role"] == "assistant")
    stub.config.replies.clear()  # a refused call took no scripted reply
    stub.script("recovered")
    ok = await chat_client.call(
        "chat", {"threadId": "t", "turnId": "2", "message": "again", "model": LITELLM}
    )
    assert ok["reply"] == "recovered" and ok["cancelled"] is False


async def test_a_whole_stream_is_a_complete_reply(
    chat_client: Client, stub: ThreadedStubLLM
) -> None:
    stub.script("The WAL mode keeps readers and the writer apart.")
    ok = await chat_client.call(
        "chat", {"threadId": "t", "turnId": "1", "message": "What is WAL?", "model": LITELLM}
    )
    assert ok["reply"] == "The WAL mode keeps readers and the writer apart."
    assert ok["cancelled"] is False


@pytest.fixture
async def garbage_server() -> AsyncIterator[str]:
    """An endpoint whose event stream is not OpenAI's: lines litellm reads past, then the end."""

    async def completions(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"<html>502 Bad Gateway</html>\n\ndata: {}\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


async def test_a_garbage_stream_is_not_an_empty_reply(
    garbage_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)  # given to the worker with the request
    model = ChatModel(LITELLM, garbage_server, timeout=60)
    with pytest.raises(WorkerError, match="before the reply was complete"):
        async for _ in model.stream([{"role": "user", "content": "hi"}]):
            pass


@pytest.mark.parametrize("model", ["openai/stub-chat", LITELLM])
async def test_an_endless_reply_is_cut_at_a_messages_length(
    model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with StubLLM(chunks=1000) as stub:
        monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)
        settings = Settings(chat_model=model, api_base=stub.base_url)
        memory = WorkspaceMemory("k", settings, window=ContextWindow(WindowConfig()))
        limit = memory.window.config.max_message_chars
        stub.script(" ".join(f"w{i}" for i in range(limit // 3)))  # more than a message holds
        try:
            with pytest.raises(ProviderError, match="longest a message can be"):
                await memory.chat("t", "1", "Tell me everything.")
            kept = memory.history("t")[-1]
            assert kept.role == "assistant" and kept.cancelled and len(kept.content) <= limit
        finally:
            await memory.close()
