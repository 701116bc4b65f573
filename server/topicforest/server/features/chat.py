"""chat: one streamed turn; deltas go out as chatDelta, $/cancelRequest stops the stream."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicforest.server import wire
from topicforest.server.notify import CHAT_DELTA
from topicforest.server.protocol import PREFIX
from topicforest.server.results import chat_json
from topicforest.server.rpc import request

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer


def setup(server: TopicForestServer) -> None:
    request(server, PREFIX + "chat")(chat)


async def chat(ls: TopicForestServer, p: wire.ChatParams) -> wire.ChatResult:
    memory = ls.workspaces.resolve(p.workspace_uri)
    thread_id, turn_id = p.thread_id, p.turn_id

    def on_delta(index: int, delta: str) -> None:
        params: wire.ChatDelta = {
            "threadId": thread_id,
            "turnId": turn_id,
            "index": index,
            "delta": delta,
        }
        ls.protocol.notify(CHAT_DELTA, params)

    outcome = await memory.chat(
        thread_id,
        turn_id,
        p.message,
        active_file=p.active_file,
        on_delta=on_delta,
        attachments=p.attachments,
        model=p.model,
        retry_of=p.retry_of,
    )
    return chat_json(outcome)
