"""THE wire protocol: every custom method, its params, result shape and errors, in one table.

The table is written in the vocabulary of `validation.py` (`Method`, `Param`), which also checks
each request's params against it (errors name the field); handlers get them as the typed
structures of `wire.py` and build results with `results.py`, typed by `wire.py` too. `wire.py`
(Python) and the client's `src/protocol.ts` (TypeScript) are generated from this table by
`python -m topicforest.server.codegen --write`, which also writes `protocol.json` (the table as
JSON, `codegen.table()`); a test fails when any of the three is stale.
"""

from __future__ import annotations

from typing import Any

from topicforest.attachments import MAX_ATTACHMENTS, REFERENCE_ROOM
from topicforest.server.validation import (
    INVALID_PARAMS,
    MAX_TEXT,
    MAX_URI,
    Method,
    Param,
    parse_api_key,
    parse_attachment,
)

PREFIX = "topicForest/"
MAX_ID = 200  # characters in thread ids, turn ids, URIs are limited separately
MAX_TITLE = 200  # characters in a thread title
PROTOCOL_VERSION = 1

# -- error codes -----------------------------------------------------------------------------
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


# -- shapes ----------------------------------------------------------------------------------
# Named unions of literals (a TypeScript type alias, a Python Literal).
ALIASES: dict[str, str] = {
    "Role": '"user"|"assistant"',
    "AttachmentKind": '"file"|"selection"|"problems"',
    "ReshapeKind": '"splitOff"|"split"|"merged"|"movedIn"|"movedOut"',
    "ModelProblem": '"noKey"|"keyRefused"|"unknownModel"|"unreachable"|"timeout"|"failed"',
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
        "reshapes": "Reshape[]",
    },
    "Reshape": {  # newest first: how new messages reshaped the topic lately (engine/reshaping.py)
        "kind": "ReshapeKind",
        "otherId": "integer",
        "otherTitle": "string|null",
        "messages": "integer",
        "at": "number",
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
    "ApiKey": {  # sent by the client; never stored, logged or echoed
        "provider": "string",
        "apiBase?": "string|null",
        "apiKey": "string",
    },
    "Thread": {
        "threadId": "string",
        "messageCount": "integer",
        "lastTime": "number",
        "title": "string",
    },
}

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
        " request of the thread carries: its size, the topics in it and those left out, and how"
        " many of the thread's own messages (0: a new thread starts with the topics alone).",
        (WORKSPACE, THREAD_ID_OPTIONAL),
        {
            "topics": "Topic[]",
            "budget": "integer",
            "used": "integer",
            "threadId": "string|null",
            "rendered": "RenderedTopic[]",
            "omittedTopics": "integer[]",
            "threadMessages": "integer",
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
        PREFIX + "setApiKeys",
        "request",
        "clientToServer",
        "The client's API keys, replacing those it sent before ([] forgets them): each for a"
        " provider (litellm's name: openai, anthropic, gemini, openrouter, ...) and, for a"
        " self-hosted or OpenAI-compatible server, its apiBase. Kept in the server's memory only"
        " and used before the environment's keys; never stored, logged or shown.",
        (
            Param(
                "keys",
                "array",
                required=True,
                items="ApiKey",
                max_items=50,
                parse=lambda name, item: parse_api_key(name, item),
            ),
        ),
        {"count": "integer"},
        ("InvalidParams",),
    ),
    Method(
        PREFIX + "testModel",
        "request",
        "clientToServer",
        "Send a model one tiny request, the way a chat turn would: whether it answers, and if"
        " not, the problem in plain words (`detail`: the provider's own, redacted).",
        (
            WORKSPACE,
            Param("model", "string", max_length=MAX_ID, nullable=True, doc="Default: chatModel"),
            Param(
                "apiBase",
                "string",
                max_length=MAX_URI,
                nullable=True,
                doc='Absent: the endpoint settings give the model; "": the provider\'s own',
            ),
        ),
        {
            "model": "string",
            "apiBase": "string|null",
            "ok": "boolean",
            "problem": "ModelProblem|null",
            "message": "string",
            "detail": "string",
        },
        (*COMMON_ERRORS, "ChatModelNotConfigured", "RequestCancelled"),
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
