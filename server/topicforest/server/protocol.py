"""THE wire protocol: every custom method, its params, result shape and errors, in one table.

Handlers get params validated by `validate()` (errors name the field) as the typed structures of
`wire.py`, and build results with the `*_json` functions below, typed by `wire.py` too. `wire.py`
(Python) and the client's `src/protocol.ts` (TypeScript) are generated from this table by
`python -m topicforest.server.codegen --write`, which also writes `protocol.json` (the table as
JSON); a test fails when any of the three is stale.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from topicforest.attachments import (
    KINDS,
    MAX_ATTACHMENTS,
    REFERENCE_ROOM,
    Attachment,
    AttachmentRef,
    user_text,
)
from topicforest.engine import Message, TopicView
from topicforest.engine.render import RenderedContext
from topicforest.server import wire
from topicforest.workspace.session import ThreadInfo
from topicforest.workspace.turn import ChatOutcome

PREFIX = "topicForest/"
MAX_TEXT = 200_000  # characters in a chat message or query (the engine's message limit)
MAX_ID = 200  # characters in thread ids, turn ids, URIs are limited separately
MAX_URI = 4096
MAX_LANGUAGE = 100  # characters in an attachment's language id
MAX_TITLE = 200  # characters in a thread title
MAX_LINE = 100_000_000  # a line number
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
# Named unions of literals (a TypeScript type alias, a Python Literal).
ALIASES: dict[str, str] = {
    "Role": '"user"|"assistant"',
    "AttachmentKind": '"file"|"selection"|"problems"',
}
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
        "role": "Role",
        "content": "string",
        "timestamp": "number",
        "tokens": "integer",
        "cancelled": "boolean",
        "attachments": "AttachmentRef[]",
    },
    "RenderedTopic": {"id": "integer", "mode": "string", "tokens": "integer"},
    "LineRange": {"startLine": "integer", "endLine": "integer"},
    "Attachment": {  # sent by the client: a key ending in ? may be left out
        "kind": "AttachmentKind",
        "path": "string",
        "range?": "LineRange|null",
        "language?": "string|null",
        "text": "string",
    },
    "AttachmentRef": {
        "kind": "AttachmentKind",
        "path": "string",
        "range": "LineRange|null",
        "language": "string|null",
        "sha256": "string",
        "tokens": "integer",
        "truncated": "boolean",
    },
    "Thread": {
        "threadId": "string",
        "messageCount": "integer",
        "lastTime": "number",
        "title": "string",
    },
}

Kind = Literal["string", "integer", "boolean", "number", "array"]
PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "number": (int, float),
    "array": (list, tuple),
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
    items: str | None = None  # arrays: the shape of their items (the table's type is items[])
    max_items: int | None = None
    parse: Callable[[str, Any], Any] | None = None  # arrays: checks and types each item


@dataclass(frozen=True)
class Method:
    name: str
    kind: Literal["request", "notification"]
    direction: Literal["clientToServer", "serverToClient"]
    doc: str
    params: tuple[Param, ...] = ()
    result: dict[str, str] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    # answered by `early` (before pygls is loaded) from the workspaces alone: read-only
    # requests and notifications whose handlers need no pygls
    early: bool = False


WORKSPACE = Param(
    "workspaceUri",
    "string",
    max_length=MAX_URI,
    nullable=True,
    doc="Workspace folder URI; default: the first folder, else the global memory",
)
TOPIC_ID = Param("topicId", "integer", required=True, doc="Topic id from listTopics")
THREAD_ID = Param("threadId", "string", required=True, max_length=MAX_ID, min_length=1)
THREAD_ID_OPTIONAL = Param(
    "threadId", "string", max_length=MAX_ID, nullable=True, doc="Include this thread's hot messages"
)
COMMON_ERRORS = ("InvalidParams", "UnknownWorkspace")
TOPIC_ERRORS = ("InvalidParams", "UnknownWorkspace", "UnknownTopic")
TOPIC_RESULT = {"topic": "Topic"}
TOPIC_MESSAGES = {"topic": "Topic", "messages": "Message[]"}
RENDER_RESULT = {
    "messages": "{role: string, content: string}[]",
    "tokens": "integer",
    "budget": "integer",
    "topics": "RenderedTopic[]",
    "omittedTopics": "integer[]",
    "hotMessageIds": "integer[]",
    "fallback": "boolean",
}


def _topic_method(
    verb: str, doc: str, extra: tuple[Param, ...] = (), result: Any = None, early: bool = False
) -> Method:
    return Method(
        PREFIX + verb,
        "request",
        "clientToServer",
        doc,
        (WORKSPACE, TOPIC_ID, *extra),
        result or TOPIC_RESULT,
        TOPIC_ERRORS,
        early,
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
            Param(
                "message",
                "string",
                True,
                max_length=MAX_TEXT - REFERENCE_ROOM,  # room for its attachments' references
                min_length=1,
                doc="User text",
            ),
            Param("activeFile", "string", max_length=MAX_URI, nullable=True, doc="Editor file"),
            Param(
                "attachments",
                "array",
                nullable=True,
                items="Attachment",
                max_items=MAX_ATTACHMENTS,
                parse=lambda name, item: parse_attachment(name, item),
                doc="Editor code for this turn only, within attachmentBudget",
            ),
            Param(
                "model",
                "string",
                max_length=MAX_ID,
                min_length=1,
                nullable=True,
                doc="This turn's chat model (overrides topicForest.chatModel)",
            ),
            Param(
                "retryOf",
                "integer",
                minimum=1,
                nullable=True,
                doc="The thread's last user message id: answer it again, store nothing new",
            ),
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
            "attachments": "AttachmentRef[]",
            "model": "string",
        },
        (*COMMON_ERRORS, "ChatModelNotConfigured", "ProviderError", "RequestCancelled"),
    ),
    Method(
        PREFIX + "listTopics",
        "request",
        "clientToServer",
        "Every topic (dropped ones too) with its state, plus the budget and what the next"
        " request of the thread carries: its size, the topics in it and those left out.",
        (WORKSPACE, THREAD_ID_OPTIONAL),
        {
            "topics": "Topic[]",
            "budget": "integer",
            "used": "integer",
            "threadId": "string|null",
            "rendered": "RenderedTopic[]",
            "omittedTopics": "integer[]",
        },
        COMMON_ERRORS,
        early=True,
    ),
    _topic_method(
        "previewTopic",
        "A topic and its original messages, without changing anything.",
        result=TOPIC_MESSAGES,
        early=True,
    ),
    _topic_method(
        "expandTopic",
        "Render the topic's original messages verbatim (budget permitting) until collapsed."
        " `messages`: the originals the thread's next request carries (its opening question"
        " first; all of them if they fit); `pushedOut`: topics that request no longer has room"
        " for.",
        (THREAD_ID_OPTIONAL,),
        result={**TOPIC_MESSAGES, "pushedOut": "integer[]"},
    ),
    _topic_method("collapseTopic", "Render the topic as its summary again."),
    _topic_method("dropTopic", "Leave the topic out of every render until restored."),
    _topic_method("restoreTopic", "Bring a dropped topic back into renders."),
    _topic_method(
        "pinTopic",
        "Always render the topic (first), or unpin it with pinned=false. `pushedOut`: topics the"
        " thread's next request no longer has room for.",
        (Param("pinned", "boolean", default=True, doc="false unpins"), THREAD_ID_OPTIONAL),
        result={**TOPIC_RESULT, "pushedOut": "integer[]"},
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
        early=True,
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
            THREAD_ID_OPTIONAL,
        ),
        RENDER_RESULT,
        COMMON_ERRORS,
        early=True,
    ),
    Method(
        PREFIX + "listThreads",
        "request",
        "clientToServer",
        "Chat threads of the workspace, newest first.",
        (WORKSPACE,),
        {"threads": "Thread[]"},
        COMMON_ERRORS,
        early=True,
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
        early=True,
    ),
    Method(
        PREFIX + "renameThread",
        "request",
        "clientToServer",
        "Give a thread the user's title (listThreads shows it instead of the first message).",
        (
            WORKSPACE,
            THREAD_ID,
            Param("title", "string", required=True, max_length=MAX_TITLE, min_length=1),
        ),
        {"thread": "Thread"},
        COMMON_ERRORS,
    ),
    Method(
        PREFIX + "deleteThread",
        "request",
        "clientToServer",
        "Delete a thread: its messages leave the store and every topic, summary and title.",
        (WORKSPACE, THREAD_ID),
        {"threadId": "string", "deletedMessages": "integer"},
        COMMON_ERRORS,
    ),
    Method(
        PREFIX + "activeFileChanged",
        "notification",
        "clientToServer",
        "The editor's active file changed (null: none); informs ranking like didOpen does.",
        (Param("uri", "string", max_length=MAX_URI, nullable=True),),
        early=True,
    ),
    Method(
        PREFIX + "topicsChanged",
        "notification",
        "serverToClient",
        "Topic state changed (graduated, summarized, dropped, restored, pinned, unpinned,"
        " expanded, collapsed, configured, workspaceAdded, workspaceRemoved, threadDeleted).",
        (
            Param("workspaceUri", "string", required=True),
            Param("reason", "string", required=True),
            Param(
                "topicIds", "array", items="integer", doc="Absent when everything may have changed"
            ),
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
    Method(
        PREFIX + "threadsChanged",
        "notification",
        "serverToClient",
        "A thread was renamed or deleted; threadId null: another window changed threads.",
        (
            Param("workspaceUri", "string", required=True),
            Param("threadId", "string", nullable=True),
            Param(
                "appended",
                "array",
                items="string",
                doc="Threads another window added messages to (absent: none)",
            ),
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
    if isinstance(value, list | tuple):
        if param.max_items is not None and len(value) > param.max_items:
            limit = param.max_items
            raise invalid_params(param.name, f"has {len(value)} items; the limit is {limit}")
        if param.parse is not None:
            return [param.parse(f"{param.name}[{i}]", item) for i, item in enumerate(value)]
        return list(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if param.minimum is not None and value < param.minimum:
            raise invalid_params(param.name, f"must be at least {param.minimum}")
        if param.maximum is not None and value > param.maximum:
            raise invalid_params(param.name, f"must be at most {param.maximum}")
        if abs(value) > 2**53:
            raise invalid_params(param.name, "is out of range")
    return value


def parse_attachment(name: str, raw: object) -> Attachment:
    """One chat attachment, checked field by field (errors name `attachments[2].path`)."""
    if not isinstance(raw, Mapping):
        raise invalid_params(name, f"must be an object, not {_json_type(raw)}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise invalid_params(f"{name}.kind", f"must be one of {', '.join(KINDS)}")
    path = _check(Param(f"{name}.path", "string", max_length=MAX_URI), raw.get("path"))
    if not path.strip():
        raise invalid_params(f"{name}.path", "must not be empty")
    text = _check(Param(f"{name}.text", "string", max_length=MAX_TEXT), raw.get("text"))
    language = raw.get("language")
    if language is not None:
        language = _check(Param(f"{name}.language", "string", max_length=MAX_LANGUAGE), language)
    return Attachment(kind, path, text, _line_range(f"{name}.range", raw.get("range")), language)


def _line_range(name: str, raw: object) -> tuple[int, int] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise invalid_params(name, f"must be an object, not {_json_type(raw)}")
    start, end = (
        _check(Param(f"{name}.{key}", "integer", minimum=0, maximum=MAX_LINE), raw.get(key))
        for key in ("startLine", "endLine")
    )
    if end < start:
        raise invalid_params(f"{name}.endLine", "must not be before startLine")
    return start, end


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
def topic_json(view: TopicView) -> wire.Topic:
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


def message_json(message: Message, refs: Sequence[AttachmentRef] = ()) -> wire.Message:
    """A message as the client shows it: the user's own text (the reference lines the model
    sees become the `attachments` chips)."""
    return {
        "id": message.id,
        "threadId": message.thread_id,
        "role": message.role,
        "content": user_text(message.content, refs),
        "timestamp": message.timestamp,
        "tokens": message.tokens,
        "cancelled": message.cancelled,
        "attachments": [attachment_ref_json(r) for r in refs],
    }


def messages_json(pairs: Sequence[tuple[Message, Sequence[AttachmentRef]]]) -> list[wire.Message]:
    return [message_json(message, refs) for message, refs in pairs]


def attachment_ref_json(ref: AttachmentRef) -> wire.AttachmentRef:
    return {
        "kind": ref.kind,
        "path": ref.path,
        "range": {"startLine": ref.range[0], "endLine": ref.range[1]} if ref.range else None,
        "language": ref.language,
        "sha256": ref.sha256,
        "tokens": ref.tokens,
        "truncated": ref.truncated,
    }


def thread_json(thread: ThreadInfo) -> wire.Thread:
    return {
        "threadId": thread.thread_id,
        "messageCount": thread.message_count,
        "lastTime": thread.last_time,
        "title": thread.title,
    }


def rendered_topics_json(context: RenderedContext) -> list[wire.RenderedTopic]:
    return [{"id": t.id, "mode": t.mode, "tokens": t.tokens} for t in context.topics]


def render_json(context: RenderedContext) -> wire.RenderContextResult:
    return {
        "messages": [{"role": m["role"], "content": m["content"]} for m in context.messages],
        "tokens": context.tokens,
        "budget": context.budget,
        "topics": rendered_topics_json(context),
        "omittedTopics": list(context.omitted_topics),
        "hotMessageIds": list(context.hot_message_ids),
        "fallback": context.fallback,
    }


def chat_json(outcome: ChatOutcome) -> wire.ChatResult:
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
        "attachments": [attachment_ref_json(r) for r in outcome.attachments],
        "model": outcome.model,
    }


# -- export ----------------------------------------------------------------------------------
def table() -> dict[str, Any]:
    """The protocol as plain JSON data (what the client mirrors)."""

    def param(p: Param) -> dict[str, Any]:
        kind = f"{p.items}[]" if p.items else p.kind
        out: dict[str, Any] = {"type": kind, "required": p.required}
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
        if p.max_items is not None:
            out["maxItems"] = p.max_items
        if p.doc:
            out["doc"] = p.doc
        return out

    return {
        "version": PROTOCOL_VERSION,
        "errors": ERRORS,
        "aliases": ALIASES,
        "shapes": SHAPES,
        "methods": {
            m.name: {
                "kind": m.kind,
                "direction": m.direction,
                "doc": m.doc,
                "params": {p.name: param(p) for p in m.params},
                "result": m.result if m.kind == "request" else None,
                "errors": {e: ERRORS[e] for e in m.errors},
                "early": m.early,
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
