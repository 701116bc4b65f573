"""renderContext: exactly what the model would receive next."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topicforest.server.protocol import PREFIX, render_json
from topicforest.server.rpc import Host, request

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer


def setup(server: TopicForestServer) -> None:
    request(server, PREFIX + "renderContext")(render_context)


def render_context(ls: Host, p: dict[str, Any]) -> dict[str, Any]:
    memory = ls.workspaces.resolve(p["workspaceUri"])
    return render_json(memory.render(p["query"], p["activeFile"], p["threadId"]))
