"""Every method's errors: a JSON-RPC error with a clear message; the server keeps serving."""

from __future__ import annotations

from typing import Any

import pytest

from topicforest.server.protocol import (
    BY_NAME,
    INVALID_PARAMS,
    MAX_TEXT,
    PREFIX,
    REQUESTS,
    UNKNOWN_TOPIC,
    UNKNOWN_WORKSPACE,
)

from .conftest import Client

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOPIC_METHODS = [
    "previewTopic",
    "expandTopic",
    "collapseTopic",
    "dropTopic",
    "restoreTopic",
    "pinTopic",
]
VALID: dict[str, dict[str, Any]] = {
    "chat": {"threadId": "t", "turnId": "1", "message": "hi"},
    "listTopics": {},
    "searchTopics": {"query": "sqlite"},
    "renderContext": {},
    "listThreads": {},
    "threadHistory": {"threadId": "t"},
    "renameThread": {"threadId": "t", "title": "T"},
    "deleteThread": {"threadId": "t"},
    **{m: {"topicId": 1} for m in TOPIC_METHODS},
    "testModel": {"model": "openai/nowhere"},
    "setApiKeys": {"keys": []},  # server-wide: names no workspace
}
BAD_PARAMS: list[tuple[str, dict[str, Any], str]] = [
    *[(m, {}, "topicId") for m in TOPIC_METHODS],
    *[(m, {"topicId": "1"}, "topicId") for m in TOPIC_METHODS],
    *[(m, {"topicId": True}, "topicId") for m in TOPIC_METHODS],
    ("pinTopic", {"topicId": 1, "pinned": "yes"}, "pinned"),
    ("chat", {"turnId": "1", "message": "hi"}, "threadId"),
    ("chat", {"threadId": "t", "message": "hi"}, "turnId"),
    ("chat", {"threadId": "t", "turnId": "1"}, "message"),
    ("chat", {"threadId": "t", "turnId": "1", "message": 42}, "message"),
    ("chat", {"threadId": "t", "turnId": "1", "message": ""}, "message"),
    ("chat", {"threadId": "t", "turnId": "1", "message": "x" * (MAX_TEXT + 1)}, "message"),
    ("chat", {"threadId": "t" * 201, "turnId": "1", "message": "hi"}, "threadId"),
    ("searchTopics", {}, "query"),
    ("setApiKeys", {}, "keys"),
    ("setApiKeys", {"keys": [{"provider": "openai", "apiKey": "a b"}]}, "keys[0].apiKey"),
    ("testModel", {"apiBase": "file:///etc/passwd"}, "apiBase"),
    ("searchTopics", {"query": "x", "limit": 0}, "limit"),
    ("searchTopics", {"query": "x", "limit": 1.5}, "limit"),
    ("renderContext", {"query": ["a"]}, "query"),
    ("renderContext", {"query": "x" * (MAX_TEXT + 1)}, "query"),
    ("threadHistory", {}, "threadId"),
    ("threadHistory", {"threadId": "t", "limit": -1}, "limit"),
    ("listTopics", {"workspaceUri": 7}, "workspaceUri"),
    ("listTopics", {"threadId": 7}, "threadId"),
    ("chat", {"threadId": "t", "turnId": "1", "message": "hi", "model": ""}, "model"),
    ("chat", {"threadId": "t", "turnId": "1", "message": "hi", "retryOf": 0}, "retryOf"),
    ("chat", {"threadId": "t", "turnId": "1", "message": "hi", "attachments": {}}, "attachments"),
    ("renameThread", {"threadId": "t"}, "title"),
    ("renameThread", {"threadId": "t", "title": "x" * 201}, "title"),
    ("deleteThread", {}, "threadId"),
]


async def still_serving(client: Client) -> None:
    assert "topics" in await client.call("listTopics")


@pytest.mark.parametrize(("method", "params", "field"), BAD_PARAMS)
async def test_invalid_params_name_the_field(
    shared_client: Client, method: str, params: dict[str, Any], field: str
) -> None:
    client = shared_client
    error = await client.rpc_error(method, params)
    assert error.code == INVALID_PARAMS
    assert error.message.startswith(f"{field}: ")
    await still_serving(client)


@pytest.mark.parametrize("method", TOPIC_METHODS)
async def test_unknown_topic(shared_client: Client, method: str) -> None:
    client = shared_client
    error = await client.rpc_error(method, {"topicId": 999})
    assert error.code == UNKNOWN_TOPIC
    assert "999" in error.message
    await still_serving(client)


async def test_every_method_rejects_an_unknown_workspace_and_non_object_params(
    shared_client: Client,
) -> None:
    client = shared_client
    assert {PREFIX + m for m in VALID} == {m.name for m in REQUESTS}
    for method, params in VALID.items():
        if any(p.name == "workspaceUri" for p in BY_NAME[PREFIX + method].params):
            error = await client.rpc_error(method, {**params, "workspaceUri": "file:///nowhere"})
            assert error.code == UNKNOWN_WORKSPACE, method
            assert "file:///nowhere" in error.message and client.workspace_uri in error.message
        for bad in ([1, 2], "text", 3):
            error = await client.rpc_error(method, bad)
            assert error.code == INVALID_PARAMS and error.message.startswith("params: "), method
    await still_serving(client)


async def test_the_default_and_explicit_workspace_are_the_same_memory(
    shared_client: Client,
) -> None:
    client = shared_client
    explicit = await client.call("listTopics", {"workspaceUri": client.workspace_uri + "/"})
    assert explicit == await client.call("listTopics")


async def test_unknown_method_and_notification_garbage(shared_client: Client) -> None:
    client = shared_client
    with pytest.raises(Exception) as info:
        await client.protocol.send_request_async(PREFIX + "noSuchMethod", {})
    assert getattr(info.value, "code", None) == -32601
    client.protocol.notify(PREFIX + "activeFileChanged", {"uri": 5})  # logged, ignored
    client.protocol.notify(PREFIX + "activeFileChanged", "garbage")
    await still_serving(client)
