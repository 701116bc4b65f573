"""The results of the protocol's requests, built from the workspace's objects (typed by `wire`)."""

from __future__ import annotations

from collections.abc import Sequence

from topicforest.attachments import AttachmentRef, user_text
from topicforest.engine import Message, TopicView
from topicforest.engine.render import RenderedContext
from topicforest.server import wire
from topicforest.workspace.model_check import ModelCheck
from topicforest.workspace.session import ThreadInfo
from topicforest.workspace.turn import ChatOutcome


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
        "reshapes": [
            {
                "kind": note.kind,
                "otherId": note.other,
                "otherTitle": note.other_title,
                "messages": note.messages,
                "at": note.at,
            }
            for note in view.reshapes
        ],
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


def model_check_json(check: ModelCheck) -> wire.TestModelResult:
    return {
        "model": check.model,
        "apiBase": check.api_base,
        "ok": check.ok,
        "problem": check.problem,
        "message": check.message,
        "detail": check.detail,
    }
