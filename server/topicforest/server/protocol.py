"""THE wire protocol: every custom method, its params, result shape and errors, in one table.

Handlers validate params with `validate()` (errors name the field) and build results with the
`*_json` functions below, whose keys are the shapes declared here. `python -m
topicforest.server.protocol --json` prints the table; `protocol.json` next to this file is that
output checked in, so the client's mirror can be contract-tested against it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from topicforest.engine import Message, TopicView
from topicforest.engine.render import RenderedContext
from topicforest.memory import ChatOutcome

PREFIX = "topicForest/"
MAX_TEXT = 200_000  # characters in a chat message or query (the engine's message limit)
MAX_ID = 200  # characters in thread ids, turn ids, URIs are limited separately
MAX_URI = 4096
PROTOCOL_VERSION = 1

# -- error codes -----------------------------------------------------------------------------
INVALID_PARAMS = -32602
UNKNOWN_TOPIC = -32001
UNKNOWN_WORKSPACE = -32002
CHAT_NOT_CONFIGURED = -32003
PROVIDER_ERROR = -32004
STORE_ERROR = -32005
REQUEST_CANCELLED = -32800

ERRORS: dict[str, int] = {
    "InvalidParams": INVALID_PARAMS,
    "UnknownTopic": UNKNOWN_TOPIC,
    "UnknownWorkspace": UNKNOWN_WORKSPACE,
    "ChatModelNotConfigured": CHAT_NOT_CONFIGURED,
    "ProviderError": PROVIDER_ERROR,
    "StoreError": STORE_ERROR,
    "RequestCancelled": REQUEST_CANCELLED,
}


class ProtocolError(Exception):
    """A documented JSON-RPC error (`rpc` hands it to pygls, which sends it as the response).

    Not pygls' own exception class: this module is imported before pygls is (see `early`).
    """

    def __init__(self, code: int, message: str, data: Any | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def invalid_params(name: str, problem: str) -> ProtocolError:
    return ProtocolError(INVALID_PARAMS, f"{name}: {problem}", {"field": name})


# -- shapes ----------------------------------------------------------------------------------
SHAPES: dict[str, dict[str, str]] = {
    "Spend": {"calls": "integer", "inputTokens": "integer", "outputTokens": "integer"},
    "Topic": {
        "id": "integer",
        "title": "string",
        "summary": "string|null",
        "pending": "boolean",
        "messageCount": "integer",
        "sourceTokens": "integer",
        "summaryTokens": "integer",
        "pinned": "boolean",
        "expanded": "boolean",
        "dropped": "boolean",
        "files": "string[]",
        "symbols": "string[]",
        "firstTime": "number",
        "lastTime": "number",
        "spend": "Spend",
    },
    "Message": {
        "id": "integer",
        "threadId": "string",
        "role": '"user"|"assistant"',
        "content": "string",
        "timestamp": "number",
        "tokens": "integer",
        "cancelled": "boolean",
    },
    "RenderedTopic": {"id": "integer", "mode": "string", "tokens": "integer"},
    "Thread": {
        "threadId": "string",
        "messageCount": "integer",
        "lastTime": "number",
        "title": "string",
    },
}

Kind = Literal["string", "integer", "boolean", "number"]
PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "number": (int, float),
}


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    required: bool = False
    default: Any = None
    doc: str = ""
    max_length: int | None = None  # strings
    min_length: int | None = None
    minimum: int | None = None  # integers
    maximum: int | None = None
    nullable: bool = False


@dataclass(frozen=True)
class Method:
    name: str
    kind: Literal["request", "notification"]
    direction: Literal["clientToServer", "serverToClient"]
    doc: str
    params: tuple[Param, ...] = ()
    result: dict[str, str] = field(default_factory=dict)
    errors: tuple[str, ...] = ()


WORKSPACE = Param(
    "workspaceUri",
    "string",
    max_length=MAX_URI,
    nullable=True,
    doc="Workspace folder URI; default: the first folder, else the global memory",
)
TOPIC_ID = Param("topicId", "integer", required=True, doc="Topic id from listTopics")
COMMON_ERRORS = ("InvalidParams", "UnknownWorkspace")
TOPIC_ERRORS = ("InvalidParams", "UnknownWorkspace", "UnknownTopic")
TOPIC_RESULT = {"topic": "Topic"}
TOPIC_MESSAGES = {"topic": "Topic", "messages": "Message[]"}
RENDER_RESULT = {
    "messages": "{role, content}[]",
    "tokens": "integer",
    "budget": "integer",
    "topics": "RenderedTopic[]",
    "omittedTopics": "integer[]",
    "hotMessageIds": "integer[]",
    "fallback": "boolean",
}


def _topic_method(verb: str, doc: str, extra: tuple[Param, ...] = (), result: Any = None) -> Method:
    return Method(
        PREFIX + verb,
        "request",
        "clientToServer",
        doc,
        (WORKSPACE, TOPIC_ID, *extra),
        result or TOPIC_RESULT,
        TOPIC_ERRORS,
    )


METHODS: tuple[Method, ...] = (
    Method(
        PREFIX + "chat",
        "request",
        "clientToServer",
        "Send a user message: stored, context rendered, model streamed (chatDelta), reply stored.",
        (
            WORKSPACE,
            Param("threadId", "string", True, max_length=MAX_ID, min_length=1, doc="Thread id"),
            Param(
                "turnId", "string", True, max_length=MAX_ID, min_length=1, doc="Echoed in deltas"
            ),
            Param("message", "string", True, max_length=MAX_TEXT, min_length=1, doc="User text"),
            Param("activeFile", "string", max_length=MAX_URI, nullable=True, doc="Editor file"),
        ),
        {
            "threadId": "string",
            "turnId": "string",
            "reply": "string",
            "cancelled": "boolean",
            "usage": "{promptTokens: integer, completionTokens: integer}",
            "userMessageId": "integer",
            "replyMessageId": "integer|null",
            "context": "{tokens: integer, budget: integer, topics: RenderedTopic[]}",
        },
        (*COMMON_ERRORS, "ChatModelNotConfigured", "ProviderError", "RequestCancelled"),
    ),
    Method(
        PREFIX + "listTopics",
        "request",
        "clientToServer",
        "Every topic (dropped ones too) with its state, plus the budget and what the next render"
        " uses of it.",
        (WORKSPACE,),
        {"topics": "Topic[]", "budget": "integer", "used": "integer"},
        COMMON_ERRORS,
    ),
    _topic_method(
        "previewTopic",
        "A topic and its original messages, without changing anything.",
        result=TOPIC_MESSAGES,
    ),
    _topic_method(
        "expandTopic",
        "Render the topic's original messages verbatim (budget permitting) until collapsed.",
        result=TOPIC_MESSAGES,
    ),
    _topic_method("collapseTopic", "Render the topic as its summary again."),
    _topic_method("dropTopic", "Leave the topic out of every render until restored."),
    _topic_method("restoreTopic", "Bring a dropped topic back into renders."),
    _topic_method(
        "pinTopic",
        "Always render the topic (first), or unpin it with pinned=false.",
        (Param("pinned", "boolean", default=True, doc="false unpins"),),
    ),
    Method(
        PREFIX + "searchTopics",
        "request",
        "clientToServer",
        "Topics ranked by similarity to a query (code-aware TF-IDF).",
        (
            WORKSPACE,
            Param("query", "string", required=True, max_length=MAX_TEXT, min_length=1),
            Param("limit", "integer", default=10, minimum=1, maximum=100),
        ),
        {"results": "{topic: Topic, score: number}[]"},
        COMMON_ERRORS,
    ),
    Method(
        PREFIX + "renderContext",
        "request",
        "clientToServer",
        "Exactly the history the model would receive next (transparency and tests).",
        (
            WORKSPACE,
            Param("query", "string", max_length=MAX_TEXT, nullable=True),
            Param("activeFile", "string", max_length=MAX_URI, nullable=True),
            Param("threadId", "string", max_length=MAX_ID, nullable=True),
        ),
        RENDER_RESULT,
        COMMON_ERRORS,
    ),
    Method(
        PREFIX + "listThreads",
        "request",
        "clientToServer",
        "Chat threads of the workspace, newest first.",
        (WORKSPACE,),
        {"threads": "Thread[]"},
        COMMON_ERRORS,
    ),
    Method(
        PREFIX + "threadHistory",
        "request",
        "clientToServer",
        "A thread's messages in order (the newest `limit` if given), cancelled ones included.",
        (
            WORKSPACE,
            Param("threadId", "string", required=True, max_length=MAX_ID, min_length=1),
            Param("limit", "integer", nullable=True, minimum=1, maximum=100_000),
        ),
        {"threadId": "string", "messages": "Message[]"},
        COMMON_ERRORS,
    ),
    Method(
        PREFIX + "activeFileChanged",
        "notification",
        "clientToServer",
        "The editor's active file changed (null: none); informs ranking like didOpen does.",
        (Param("uri", "string", max_length=MAX_URI, nullable=True),),
    ),
    Method(
        PREFIX + "topicsChanged",
        "notification",
        "serverToClient",
        "Topic state changed (graduated, summarized, dropped, restored, pinned, unpinned,"
        " expanded, collapsed, configured, workspaceAdded, workspaceRemoved).",
        (
            Param("workspaceUri", "string", required=True),
            Param("reason", "string", required=True),
            Param("topicIds", "integer", doc="integer[]; absent when everything may have changed"),
        ),
    ),
    Method(
        PREFIX + "chatDelta",
        "notification",
        "serverToClient",
        "One streamed piece of a chat reply; pieces of a turn join, by index, to its reply.",
        (
            Param("threadId", "string", required=True),
            Param("turnId", "string", required=True),
            Param("index", "integer", required=True),
            Param("delta", "string", required=True),
        ),
    ),
)
BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}
REQUESTS = tuple(m for m in METHODS if m.kind == "request")


# -- validation ------------------------------------------------------------------------------
def validate(method: Method, raw: object) -> dict[str, Any]:
    """Typed params with defaults applied; raises InvalidParams naming the offending field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise invalid_params("params", f"must be an object, not {_json_type(raw)}")
    out: dict[str, Any] = {}
    for param in method.params:
        value = raw.get(param.name)
        if value is None:
            if param.required:
                raise invalid_params(param.name, "is required")
            out[param.name] = param.default
            continue
        out[param.name] = _check(param, value)
    return out


def _check(param: Param, value: object) -> Any:
    if isinstance(value, bool) and param.kind != "boolean":
        raise invalid_params(param.name, f"must be {_article(param.kind)}, not a boolean")
    if isinstance(value, float) and param.kind == "integer" and value.is_integer():
        value = int(value)  # some clients send 3.0
    if not isinstance(value, PY_TYPES[param.kind]):
        raise invalid_params(param.name, f"must be {_article(param.kind)}, not {_json_type(value)}")
    if isinstance(value, str) and not _encodable(value):
        raise invalid_params(param.name, "must be valid Unicode text (it holds a lone surrogate)")
    if isinstance(value, str) and param.max_length is not None and len(value) > param.max_length:
        raise invalid_params(
            param.name, f"is {len(value)} characters long; the limit is {param.max_length}"
        )
    if isinstance(value, str) and param.min_length is not None and len(value) < param.min_length:
        raise invalid_params(param.name, "must not be empty")
    if isinstance(value, int) and not isinstance(value, bool):
        if param.minimum is not None and value < param.minimum:
            raise invalid_params(param.name, f"must be at least {param.minimum}")
        if param.maximum is not None and value > param.maximum:
            raise invalid_params(param.name, f"must be at most {param.maximum}")
        if abs(value) > 2**53:
            raise invalid_params(param.name, "is out of range")
    return value


def _encodable(text: str) -> bool:
    """Whether `text` can be stored and sent as UTF-8 (JSON's \\ud800 escapes decode to lone
    surrogates, which SQLite and every encoder refuse)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Sequence):
        return "an array"
    return "an object"


# -- results ---------------------------------------------------------------------------------
def topic_json(view: TopicView) -> dict[str, Any]:
    return {
        "id": view.id,
        "title": view.title,
        "summary": view.summary,
        "pending": view.pending,
        "messageCount": view.message_count,
        "sourceTokens": view.source_tokens,
        "summaryTokens": view.summary_tokens,
        "pinned": view.pinned,
        "expanded": view.expanded,
        "dropped": view.dropped,
        "files": list(view.files),
        "symbols": list(view.symbols),
        "firstTime": view.first_time,
        "lastTime": view.last_time,
        "spend": {
            "calls": view.spend.calls,
            "inputTokens": view.spend.input_tokens,
            "outputTokens": view.spend.output_tokens,
        },
    }


def message_json(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "threadId": message.thread_id,
        "role": message.role,
        "content": message.content,
        "timestamp": message.timestamp,
        "tokens": message.tokens,
        "cancelled": message.cancelled,
    }


def rendered_topics_json(context: RenderedContext) -> list[dict[str, Any]]:
    return [{"id": t.id, "mode": t.mode, "tokens": t.tokens} for t in context.topics]


def render_json(context: RenderedContext) -> dict[str, Any]:
    return {
        "messages": [dict(m) for m in context.messages],
        "tokens": context.tokens,
        "budget": context.budget,
        "topics": rendered_topics_json(context),
        "omittedTopics": list(context.omitted_topics),
        "hotMessageIds": list(context.hot_message_ids),
        "fallback": context.fallback,
    }


def chat_json(outcome: ChatOutcome) -> dict[str, Any]:
    reply = outcome.reply_message
    return {
        "threadId": outcome.thread_id,
        "turnId": outcome.turn_id,
        "reply": outcome.reply,
        "cancelled": outcome.cancelled,
        "usage": {
            "promptTokens": outcome.prompt_tokens,
            "completionTokens": outcome.completion_tokens,
        },
        "userMessageId": outcome.user_message.id,
        "replyMessageId": reply.id if reply else None,
        "context": {
            "tokens": outcome.context.tokens,
            "budget": outcome.context.budget,
            "topics": rendered_topics_json(outcome.context),
        },
    }


# -- export ----------------------------------------------------------------------------------
def table() -> dict[str, Any]:
    """The protocol as plain JSON data (what the client mirrors)."""

    def param(p: Param) -> dict[str, Any]:
        out: dict[str, Any] = {"type": p.kind, "required": p.required}
        if p.default is not None:
            out["default"] = p.default
        if p.nullable:
            out["nullable"] = True
        if p.max_length is not None:
            out["maxLength"] = p.max_length
        if p.min_length is not None:
            out["minLength"] = p.min_length
        if p.minimum is not None:
            out["minimum"] = p.minimum
        if p.maximum is not None:
            out["maximum"] = p.maximum
        return out

    return {
        "version": PROTOCOL_VERSION,
        "errors": ERRORS,
        "shapes": SHAPES,
        "methods": {
            m.name: {
                "kind": m.kind,
                "direction": m.direction,
                "doc": m.doc,
                "params": {p.name: param(p) for p in m.params},
                "result": m.result if m.kind == "request" else None,
                "errors": {e: ERRORS[e] for e in m.errors},
            }
            for m in METHODS
        },
    }


EXPORT_PATH = Path(__file__).with_name("protocol.json")


def export_text() -> str:
    return json.dumps(table(), indent=2, sort_keys=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The Topic Forest wire protocol table.")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    parser.add_argument("--write", action="store_true", help=f"rewrite {EXPORT_PATH.name}")
    args = parser.parse_args(argv)
    if args.write:
        EXPORT_PATH.write_text(export_text(), encoding="utf-8")
    if args.json or not args.write:
        sys.stdout.write(export_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
