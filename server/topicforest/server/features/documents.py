"""The active editor file (it informs topic ranking): from didOpen/didChange or the client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topicforest.server.protocol import PREFIX
from topicforest.server.rpc import Host, notification

if TYPE_CHECKING:
    from lsprotocol import types

    from topicforest.server.server import TopicForestServer

# lsprotocol's TEXT_DOCUMENT_DID_OPEN / _DID_CHANGE: this module is also used before it is loaded
DID_OPEN = "textDocument/didOpen"
DID_CHANGE = "textDocument/didChange"


def setup(server: TopicForestServer) -> None:
    server.feature(DID_OPEN)(did_open)
    server.feature(DID_CHANGE)(did_change)
    notification(server, PREFIX + "activeFileChanged")(active_file_changed)


def did_open(ls: TopicForestServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.workspaces.for_document(params.text_document.uri).active_file = params.text_document.uri


def did_change(ls: TopicForestServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.workspaces.for_document(params.text_document.uri).active_file = params.text_document.uri


def active_file_changed(ls: Host, params: dict[str, Any]) -> None:
    uri = params["uri"]
    if uri is None:
        for memory in ls.workspaces.memories.values():
            memory.active_file = None
        return
    ls.workspaces.for_document(uri).active_file = uri
