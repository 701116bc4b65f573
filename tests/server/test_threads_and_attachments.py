"""Issue 15 on the wire: attachments, per-turn model, Retry, the thread's real budget, threads."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_lsp

from topicforest.server.protocol import INVALID_PARAMS, PREFIX, SHAPES
from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import CONFIG, CONVERSATION, Client, replay, start

FILE = "\n".join(f"line {i}: value_{i} = compute_{i}(x)" for i in range(1, 401))
SELECTION = "def rate_limit(requests):\n    return requests[:300]\n"


@pytest_lsp.fixture(config=CONFIG)
async def small(lsp_client: Client, tmp_path: Path, stub: ThreadedStubLLM) -> AsyncIterator[None]:
    """The stub behind a small attachment budget (so a 400-line file must be cut)."""
    await start(
        lsp_client,
        tmp_path,
        {
            "chatModel": "openai/stub-chat",
            "apiBase": stub.base_url,
            "historyBudget": 512,
            "attachmentBudget": 600,
        },
    )
    yield
    await lsp_client.shutdown_session()


def attachments() -> list[dict[str, Any]]:
    return [
        {"kind": "file", "path": "src/big.py", "language": "python", "text": FILE},
        {
            "kind": "selection",
            "path": "app/limits.py",
            "range": {"startLine": 9, "endLine": 10},
            "language": "python",
            "text": SELECTION,
        },
    ]


async def test_attachments_go_into_this_request_only_within_their_budget(
    small: Client, stub: ThreadedStubLLM
) -> None:
    stub.script("first answer", "second answer")
    params = {"threadId": "t", "turnId": "1", "message": "Why is this slow?"}
    result = await small.call("chat", {**params, "attachments": attachments()})

    big, selection = result["attachments"]
    assert set(big) == set(SHAPES["AttachmentRef"])
    assert big["truncated"] is True and selection["truncated"] is False
    assert big["sha256"] == hashlib.sha256(FILE.encode()).hexdigest()
    assert selection["range"] == {"startLine": 9, "endLine": 10}
    assert big["tokens"] > 0 and big["tokens"] + selection["tokens"] <= 600
    sent = stub.calls("chat")[0].messages[-1]
    assert sent["role"] == "user" and sent["content"].startswith("Why is this slow?")
    assert SELECTION.strip() in sent["content"]  # the small one whole
    assert "line 1: value_1" in sent["content"] and "line 400:" not in sent["content"]
    assert "of src/big.py not sent]" in sent["content"]  # the cut is marked, never silent
    assert "[attached" not in sent["content"]  # the code itself, not the reference

    # The history shows the user's text and chips; the next turn carries only the reference.
    history = (await small.call("threadHistory", {"threadId": "t"}))["messages"]
    assert history[0]["content"] == "Why is this slow?"
    assert history[0]["attachments"] == result["attachments"]
    assert history[1]["attachments"] == []
    await small.call("chat", {**params, "turnId": "2", "message": "And now?"})
    second = "\n".join(m["content"] for m in stub.calls("chat")[1].messages)
    assert "[attached src/big.py]" in second and "[attached app/limits.py:10-11]" in second
    assert "line 1: value_1" not in second and "rate_limit" not in second


async def test_bad_attachments_name_the_field_and_the_server_keeps_serving(
    small: Client,
) -> None:
    base = {"threadId": "t", "turnId": "x", "message": "look"}
    cases = [
        ([{"kind": "file", "text": "x"}], "attachments[0].path"),
        ([*attachments(), {"kind": "diff", "path": "a", "text": ""}], "attachments[2].kind"),
        ([{"kind": "file", "path": "a", "text": 3}], "attachments[0].text"),
        (
            [{"kind": "file", "path": "a", "text": "", "range": {"startLine": 5, "endLine": 2}}],
            "attachments[0].range.endLine",
        ),
        ([{"kind": "file", "path": "a", "text": ""}] * 21, "attachments"),
        ("src/a.py", "attachments"),
    ]
    for value, field in cases:
        error = await small.rpc_error("chat", {**base, "attachments": value})
        assert error.code == INVALID_PARAMS and error.data == {"field": field}, (field, error)
    assert (await small.call("threadHistory", {"threadId": "t"}))["messages"] == []


async def test_retry_answers_the_last_question_again_without_storing_it_twice(
    small: Client, stub: ThreadedStubLLM
) -> None:
    stub.script("a flaky answer", "a better answer")
    params = {"threadId": "t", "turnId": "1", "message": "Why is this slow?"}
    first = await small.call("chat", {**params, "attachments": attachments()})
    asked = first["userMessageId"]
    retried = await small.call("chat", {**params, "turnId": "2", "retryOf": asked})

    assert retried["userMessageId"] == asked and retried["reply"] == "a better answer"
    assert retried["attachments"] == first["attachments"]
    history = (await small.call("threadHistory", {"threadId": "t"}))["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "assistant"]
    again = stub.calls("chat")[1].messages
    # The question is asked last again, its code re-sent as it was; the first answer is not.
    assert again[-1] == stub.calls("chat")[0].messages[-1]
    assert not any(m["content"] == "a flaky answer" for m in again)

    error = await small.rpc_error("chat", {**params, "turnId": "3", "retryOf": asked + 1})
    assert error.code == INVALID_PARAMS and error.data == {"field": "retryOf"}
    other = await small.rpc_error("chat", {**params, "threadId": "u", "retryOf": asked})
    assert other.data == {"field": "retryOf"}


async def test_a_turn_can_use_another_model(small: Client, stub: ThreadedStubLLM) -> None:
    stub.script("from the other one")
    params = {"threadId": "t", "turnId": "1", "message": "hello", "model": "openai/stub-other"}
    result = await small.call("chat", params)
    assert result["model"] == "openai/stub-other"
    assert stub.calls("chat")[-1].model == "stub-other"
    plain = await small.call("chat", {**params, "turnId": "2", "model": None})
    assert plain["model"] == "openai/stub-chat" and stub.calls("chat")[-1].model == "stub-chat"


async def test_list_topics_of_a_thread_is_the_next_request(
    chat_client: Client, stub: ThreadedStubLLM
) -> None:
    await replay(chat_client, stub, CONVERSATION * 2)
    # Upkeep may still be graduating the last exchanges: compare a listing and a render with no
    # change between them (the listing is the same after the render). A stale cached listing
    # is the same too, so it still fails below.
    for _ in range(50):
        listed = await chat_client.call("listTopics", {"threadId": "t1"})
        rendered = await chat_client.call("renderContext", {"threadId": "t1"})
        if await chat_client.call("listTopics", {"threadId": "t1"}) == listed:
            break
        await asyncio.sleep(0.05)
    assert listed["threadId"] == "t1"
    assert listed["used"] == rendered["tokens"] and listed["budget"] == rendered["budget"]
    assert listed["rendered"] == rendered["topics"]
    assert listed["omittedTopics"] == rendered["omittedTopics"]
    assert rendered["hotMessageIds"]  # the thread's hot messages count: the 603 vs 1,587
    assert listed["threadMessages"] == len(rendered["hotMessageIds"])
    plain = await chat_client.call("listTopics")
    assert plain["threadId"] is None and plain["used"] < listed["used"]
    # a new thread's next request carries the workspace's topics and none of its own messages
    fresh = await chat_client.call("listTopics", {"threadId": "new"})
    assert fresh["threadMessages"] == 0 and fresh["rendered"]
    assert fresh["used"] == (await chat_client.call("renderContext", {"threadId": "new"}))["tokens"]


async def test_rename_and_delete_a_thread(chat_client: Client, stub: ThreadedStubLLM) -> None:
    await replay(chat_client, stub, CONVERSATION * 2, thread="keep")
    doomed = [("user", f"{text} (zebrafish)") if role == "user" else (role, text)
              for role, text in CONVERSATION]  # fmt: skip
    await replay(chat_client, stub, doomed * 2, thread="doomed")

    renamed = await chat_client.call(
        "renameThread", {"threadId": "keep", "title": " SQLite\nlocks "}
    )
    assert renamed["thread"]["title"] == "SQLite locks"
    assert set(renamed["thread"]) == set(SHAPES["Thread"])
    titles = {t["threadId"]: t["title"] for t in (await chat_client.call("listThreads"))["threads"]}
    assert titles["keep"] == "SQLite locks"
    await chat_client.wait_for(PREFIX + "threadsChanged", lambda p: p["threadId"] == "keep")
    for bad, field in (
        ({"threadId": "nope", "title": "x"}, "threadId"),
        ({"threadId": "keep", "title": "\n"}, "title"),
    ):
        error = await chat_client.rpc_error("renameThread", bad)
        assert error.code == INVALID_PARAMS and error.data == {"field": field}

    deleted = await chat_client.call("deleteThread", {"threadId": "doomed"})
    assert deleted == {"threadId": "doomed", "deletedMessages": 2 * len(doomed)}
    await chat_client.wait_for(PREFIX + "threadsChanged", lambda p: p["threadId"] == "doomed")
    await chat_client.wait_for(PREFIX + "topicsChanged", lambda p: p["reason"] == "threadDeleted")
    threads = (await chat_client.call("listThreads"))["threads"]
    assert [t["threadId"] for t in threads] == ["keep"]
    assert (await chat_client.call("threadHistory", {"threadId": "doomed"}))["messages"] == []
    for topic in (await chat_client.call("listTopics"))["topics"]:
        preview = await chat_client.call("previewTopic", {"topicId": topic["id"]})
        assert all(m["threadId"] == "keep" for m in preview["messages"])
        assert "zebrafish" not in (topic["summary"] or "") + topic["title"]
    context = await chat_client.call("renderContext", {"query": "zebrafish", "threadId": "keep"})
    assert "zebrafish" not in "\n".join(m["content"] for m in context["messages"])
    error = await chat_client.rpc_error("deleteThread", {"threadId": "doomed"})
    assert error.code == INVALID_PARAMS and error.data == {"field": "threadId"}
