"""A pygls converter that leaves custom-method params and results as plain JSON.

pygls turns the params of methods it does not know into namedtuples (renaming awkward keys and
popping a `type_name` key). Our handlers validate raw JSON against `protocol.METHODS` instead, and
the test client wants plain dicts back, so both sides use this converter.
"""

from __future__ import annotations

from typing import Any

import cattrs
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)


def raw_converter() -> cattrs.Converter:
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]

    def request(obj: dict[str, Any], cls: type) -> JsonRPCRequestMessage:
        return JsonRPCRequestMessage(
            id=obj["id"], method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params")
        )

    def notification(obj: dict[str, Any], cls: type) -> JsonRPCNotification:
        return JsonRPCNotification(
            method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params")
        )

    def response(obj: dict[str, Any], cls: type) -> JsonRPCResponseMessage:
        return JsonRPCResponseMessage(
            id=obj["id"], jsonrpc=obj["jsonrpc"], result=obj.get("result")
        )

    converter.register_structure_hook(JsonRPCRequestMessage, request)
    converter.register_structure_hook(JsonRPCNotification, notification)
    converter.register_structure_hook(JsonRPCResponseMessage, response)
    return converter


def warm_up(converter: cattrs.Converter) -> None:
    """Build cattrs' (lazily generated) initialize converters now, not during the handshake."""
    from lsprotocol import types

    converter.structure(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "processId": None,
                "rootUri": None,
                "capabilities": {
                    "window": {"workDoneProgress": True},
                    "workspace": {"workspaceFolders": True, "configuration": True},
                    "textDocument": {"synchronization": {"dynamicRegistration": True}},
                },
                "workspaceFolders": [{"uri": "file:///", "name": "warm-up"}],
            },
        },
        types.InitializeRequest,
    )
    result = types.InitializeResult(capabilities=types.ServerCapabilities())
    converter.unstructure(types.InitializeResponse(id=0, result=result))
