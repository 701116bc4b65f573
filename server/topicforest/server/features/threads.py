"""Chat threads: which exist, and each one's messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topicforest.server.protocol import PREFIX, message_json
from topicforest.server.rpc import Host, request

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer

Params = dict[str, Any]


def setup(server: TopicForestServer) -> None:
    request(server, PREFIX + "listThreads")(list_threads)
    request(server, PREFIX + "threadHistory")(thread_history)


def list_threads(ls: Host, p: Params) -> Params:
    threads = ls.workspaces.resolve(p["workspaceUri"]).threads()
    return {
        "threads": [
            {
                "threadId": t.thread_id,
                "messageCount": t.message_count,
                "lastTime": t.last_time,
                "title": t.title,
            }
            for t in threads
        ]
    }


def thread_history(ls: Host, p: Params) -> Params:
    messages = ls.workspaces.resolve(p["workspaceUri"]).history(p["threadId"], p["limit"])
    return {"threadId": p["threadId"], "messages": [message_json(m) for m in messages]}
