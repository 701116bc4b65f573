"""Chat threads: which exist, each one's messages, renaming and deleting them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topicforest.engine.render import sanitize_line
from topicforest.server.protocol import (
    MAX_TITLE,
    PREFIX,
    invalid_params,
    messages_json,
    thread_json,
)
from topicforest.server.rpc import Host, request

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer

Params = dict[str, Any]


def setup(server: TopicForestServer) -> None:
    request(server, PREFIX + "listThreads")(list_threads)
    request(server, PREFIX + "threadHistory")(thread_history)
    request(server, PREFIX + "renameThread")(rename_thread)
    request(server, PREFIX + "deleteThread")(delete_thread)


def list_threads(ls: Host, p: Params) -> Params:
    threads = ls.workspaces.resolve(p["workspaceUri"]).threads()
    return {"threads": [thread_json(t) for t in threads]}


def thread_history(ls: Host, p: Params) -> Params:
    memory = ls.workspaces.resolve(p["workspaceUri"])
    messages = memory.history(p["threadId"], p["limit"])
    return {"threadId": p["threadId"], "messages": messages_json(memory.attached(messages))}


def rename_thread(ls: Host, p: Params) -> Params:
    if not sanitize_line(p["title"], MAX_TITLE):
        raise invalid_params("title", "must have a printable character")
    memory = ls.workspaces.resolve(p["workspaceUri"])
    return {"thread": thread_json(memory.rename_thread(p["threadId"], p["title"]))}


def delete_thread(ls: Host, p: Params) -> Params:
    deleted = ls.workspaces.resolve(p["workspaceUri"]).delete_thread(p["threadId"])
    return {"threadId": p["threadId"], "deletedMessages": deleted}
