"""The active editor file (it informs topic ranking): from didOpen/didChange or the client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from topicforest.server.protocol import PREFIX
from topicforest.server.rpc import notification

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer


def setup(server: TopicForestServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    notification(server, PREFIX + "activeFileChanged")(active_file_changed)


def did_open(ls: TopicForestServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.workspaces.for_document(params.text_document.uri).active_file = params.text_document.uri


def did_change(ls: TopicForestServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.workspaces.for_document(params.text_document.uri).active_file = params.text_document.uri


def active_file_changed(ls: TopicForestServer, params: dict[str, Any]) -> None:
    uri = params["uri"]
    if uri is None:
        for memory in ls.workspaces.memories.values():
            memory.active_file = None
        return
    ls.workspaces.for_document(uri).active_file = uri
