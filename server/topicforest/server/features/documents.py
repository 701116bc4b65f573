"""The active editor file (it informs topic ranking): from didOpen/didChange or the client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicforest.server import wire
from topicforest.server.protocol import PREFIX
from topicforest.server.rpc import Handler, Host, notification

if TYPE_CHECKING:
    from lsprotocol import types

    from topicforest.server.server import TopicForestServer

# lsprotocol's TEXT_DOCUMENT_DID_OPEN / _DID_CHANGE: this module is also used before it is loaded
DID_OPEN = "textDocument/didOpen"
DID_CHANGE = "textDocument/didChange"


def setup(server: TopicForestServer) -> None:
    server.feature(DID_OPEN)(did_open)
    server.feature(DID_CHANGE)(did_change)
    for verb, handler in ROUTES.items():
        notification(server, PREFIX + verb)(handler)


def did_open(ls: TopicForestServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.workspaces.for_document(params.text_document.uri).active_file = params.text_document.uri


def did_change(ls: TopicForestServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.workspaces.for_document(params.text_document.uri).active_file = params.text_document.uri


def active_file_changed(ls: Host, p: wire.ActiveFileChangedParams) -> None:
    uri = p.uri
    if uri is None:
        for memory in ls.workspaces.memories.values():
            memory.active_file = None
        return
    ls.workspaces.for_document(uri).active_file = uri


ROUTES: dict[str, Handler] = {"activeFileChanged": active_file_changed}
