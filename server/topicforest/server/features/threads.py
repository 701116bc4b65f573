"""Chat threads: which exist, each one's messages, renaming and deleting them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicforest.engine.render import sanitize_line
from topicforest.server import wire
from topicforest.server.protocol import MAX_TITLE, PREFIX
from topicforest.server.results import messages_json, thread_json
from topicforest.server.rpc import Handler, Host, request
from topicforest.server.validation import invalid_params

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer


def setup(server: TopicForestServer) -> None:
    for verb, handler in ROUTES.items():
        request(server, PREFIX + verb)(handler)


def list_threads(ls: Host, p: wire.ListThreadsParams) -> wire.ListThreadsResult:
    threads = ls.workspaces.resolve(p.workspace_uri).threads()
    return {"threads": [thread_json(t) for t in threads]}


def thread_history(ls: Host, p: wire.ThreadHistoryParams) -> wire.ThreadHistoryResult:
    memory = ls.workspaces.resolve(p.workspace_uri)
    messages = memory.history(p.thread_id, p.limit)
    return {"threadId": p.thread_id, "messages": messages_json(memory.attached(messages))}


def rename_thread(ls: Host, p: wire.RenameThreadParams) -> wire.RenameThreadResult:
    if not sanitize_line(p.title, MAX_TITLE):
        raise invalid_params("title", "must have a printable character")
    memory = ls.workspaces.resolve(p.workspace_uri)
    return {"thread": thread_json(memory.rename_thread(p.thread_id, p.title))}


def delete_thread(ls: Host, p: wire.DeleteThreadParams) -> wire.DeleteThreadResult:
    deleted = ls.workspaces.resolve(p.workspace_uri).delete_thread(p.thread_id)
    return {"threadId": p.thread_id, "deletedMessages": deleted}


ROUTES: dict[str, Handler] = {
    "listThreads": list_threads,
    "threadHistory": thread_history,
    "renameThread": rename_thread,
    "deleteThread": delete_thread,
}
