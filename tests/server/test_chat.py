"""Chat turns end to end: streaming, topics forming, background summaries, cancellation, faults."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from topicforest.server.protocol import CHAT_NOT_CONFIGURED, PREFIX, PROVIDER_ERROR, SHAPES
from topicforest.testing.stub_llm import STUB_API_KEY, ThreadedStubLLM

from .conftest import HANG, SAMPLE, Client, replay, summarized


async def test_deltas_arrive_in_order_and_join_to_the_stored_reply(
    chat_client: Client, stub: ThreadedStubLLM
) -> None:
    stub.script("First, open store/db.py. Then set journal_mode=WAL and busy_timeout=5000 there.")
    result = await chat_client.call(
        "chat", {"threadId": "t1", "turnId": "turn-1", "message": "How do I stop SQLite locking?"}
    )
    deltas = [d for d in chat_client.notes[PREFIX + "chatDelta"] if d["turnId"] == "turn-1"]
    assert len(deltas) > 1
    assert [d["index"] for d in deltas] == list(range(len(deltas)))
    assert "".join(d["delta"] for d in deltas) == result["reply"]
    assert result["reply"].startswith("First, open store/db.py.")
    assert result["cancelled"] is False
    assert result["usage"]["promptTokens"] > 0 and result["usage"]["completionTokens"] > 0

    history = await chat_client.call("threadHistory", {"threadId": "t1"})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert [m["id"] for m in history["messages"]] == [
        result["userMessageId"],
        result["replyMessageId"],
    ]
    assert history["messages"][1]["content"] == result["reply"]
    assert set(history["messages"][0]) == set(SHAPES["Message"])

    # The model received the question, after the system prompt.
    sent = stub.calls("chat")[0].messages
    assert sent[0]["role"] == "system"
    assert sent[-1] == {"role": "user", "content": "How do I stop SQLite locking?"}


async def test_topics_form_and_get_summaries_in_the_background(
    chat_client: Client, stub: ThreadedStubLLM
) -> None:
    await replay(chat_client, stub, SAMPLE)
    topics = await summarized(chat_client)
    assert len(topics) >= 2
    assert all(set(t) == set(SHAPES["Topic"]) for t in topics)
    assert all(t["summary"] for t in topics)
    assert any(t["files"] for t in topics)
    changed = chat_client.notes[PREFIX + "topicsChanged"]
    reasons = {n["reason"] for n in changed}
    assert {"graduated", "summarized"} <= reasons
    assert all(n["workspaceUri"] == chat_client.workspace_uri for n in changed)
    # Work-done progress was reported while summarizing.
    assert chat_client.progress_reports


async def test_a_slow_summarizer_never_delays_a_chat_turn(
    chat_client: Client, stub: ThreadedStubLLM
) -> None:
    stub.config.kind_latency["summary"] = 1.5
    await replay(chat_client, stub, SAMPLE[:40])
    await chat_client.until(lambda: stub.calls("summary"))  # the quiet spell starts summaries
    stub.script("quick answer")
    result = await chat_client.call(
        "chat", {"threadId": "t1", "turnId": "during", "message": "still there?"}
    )
    assert result["reply"] == "quick answer"
    # The turn completed while summary calls were still in flight: turns never wait for them.
    assert any(s.finished is None for s in stub.calls("summary"))
    topics = await summarized(chat_client)
    assert all(t["summary"] for t in topics)


async def test_cancel_mid_stream_keeps_the_partial_reply_marked_cancelled(
    chat_client: Client, stub: ThreadedStubLLM
) -> None:
    full = " ".join(f"word{i}" for i in range(200))
    stub.script(full)
    stub.config.chunks = 40
    stub.config.chunk_latency = 0.5  # 20 s of stream: the cancel lands in it, however loaded
    future = asyncio.wrap_future(
        chat_client.protocol.send_request(
            PREFIX + "chat",
            {"threadId": "t1", "turnId": "slow", "message": "Write a long answer"},
            msg_id="chat-cancel",
        )
    )
    await chat_client.wait_for(PREFIX + "chatDelta", lambda d: d["turnId"] == "slow")
    chat_client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="chat-cancel"))
    result = await asyncio.wait_for(future, HANG)
    assert result["cancelled"] is True
    assert result["reply"] and full.startswith(result["reply"]) and result["reply"] != full

    history = (await chat_client.call("threadHistory", {"threadId": "t1"}))["messages"]
    assert history[0]["content"] == "Write a long answer"
    assert history[1]["cancelled"] is True and history[1]["content"] == result["reply"]
    # The server keeps serving, and the next turn streams in full.
    stub.config.chunk_latency = 0.0
    stub.script("done")
    again = await chat_client.call("chat", {"threadId": "t1", "turnId": "t2", "message": "ok?"})
    assert again["reply"] == "done" and again["cancelled"] is False


async def test_provider_errors_are_clear_and_lose_nothing(
    chat_client: Client, stub: ThreadedStubLLM
) -> None:
    for status in (500, 429):
        stub.fail_kind("chat", "status", status=status, message=f"boom {STUB_API_KEY}")
        error = await chat_client.rpc_error(
            "chat", {"threadId": "t1", "turnId": f"e{status}", "message": f"question {status}"}
        )
        assert error.code == PROVIDER_ERROR
        assert "openai/stub-chat" in error.message
        assert STUB_API_KEY not in error.message
    stub.fail_kind("chat", "broken_sse")
    error = await chat_client.rpc_error(
        "chat", {"threadId": "t1", "turnId": "broken", "message": "question broken"}
    )
    assert error.code == PROVIDER_ERROR

    history = (await chat_client.call("threadHistory", {"threadId": "t1"}))["messages"]
    users = [m["content"] for m in history if m["role"] == "user"]
    assert users == ["question 500", "question 429", "question broken"]
    assert all(m["cancelled"] for m in history if m["role"] == "assistant")
    assert all(STUB_API_KEY not in m.message for m in chat_client.log_messages)
    stub.script("recovered")
    ok = await chat_client.call("chat", {"threadId": "t1", "turnId": "ok", "message": "again"})
    assert ok["reply"] == "recovered"


async def test_failing_summary_models_fall_back_to_the_offline_summarizer(
    chat_client: Client, stub: ThreadedStubLLM
) -> None:
    stub.fail_kind("summary", "status", status=500, times=1000)
    await replay(chat_client, stub, SAMPLE[:30])
    topics = await summarized(chat_client)
    assert all(t["summary"] for t in topics)
    assert stub.calls("summary") and not any(r.ok for r in stub.calls("summary"))
    history = (await chat_client.call("threadHistory", {"threadId": "t1"}))["messages"]
    assert len(history) == 30


async def test_chat_without_a_model_explains_how_to_configure_one(client: Client) -> None:
    error = await client.rpc_error("chat", {"threadId": "t", "turnId": "1", "message": "hello"})
    assert error.code == CHAT_NOT_CONFIGURED
    assert "topicForest.chatModel" in error.message
    assert (await client.call("listTopics"))["topics"] == []
