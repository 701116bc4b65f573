"""renderContext: exactly what the model would receive next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicforest.server import wire
from topicforest.server.protocol import PREFIX
from topicforest.server.results import render_json
from topicforest.server.rpc import Handler, Host, request

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer


def setup(server: TopicForestServer) -> None:
    for verb, handler in ROUTES.items():
        request(server, PREFIX + verb)(handler)


def render_context(ls: Host, p: wire.RenderContextParams) -> wire.RenderContextResult:
    memory = ls.workspaces.resolve(p.workspace_uri)
    return render_json(memory.render(p.query, p.active_file, p.thread_id))


ROUTES: dict[str, Handler] = {"renderContext": render_context}
