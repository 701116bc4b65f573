"""chat: one streamed turn; deltas go out as chatDelta, $/cancelRequest stops the stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topicforest.server.notify import CHAT_DELTA
from topicforest.server.protocol import PREFIX, chat_json
from topicforest.server.rpc import request

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer


def setup(server: TopicForestServer) -> None:
    request(server, PREFIX + "chat")(chat)


async def chat(ls: TopicForestServer, p: dict[str, Any]) -> dict[str, Any]:
    memory = ls.workspaces.resolve(p["workspaceUri"])
    thread_id, turn_id = p["threadId"], p["turnId"]

    def on_delta(index: int, delta: str) -> None:
        ls.protocol.notify(
            CHAT_DELTA, {"threadId": thread_id, "turnId": turn_id, "index": index, "delta": delta}
        )

    outcome = await memory.chat(
        thread_id,
        turn_id,
        p["message"],
        active_file=p["activeFile"],
        on_delta=on_delta,
        attachments=p["attachments"],
        model=p["model"],
        retry_of=p["retryOf"],
    )
    return chat_json(outcome)
