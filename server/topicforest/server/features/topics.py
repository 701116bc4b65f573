"""Topic methods: list, preview, expand/collapse, drop/restore, pin, search."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicforest.server import wire
from topicforest.server.protocol import PREFIX
from topicforest.server.results import messages_json, rendered_topics_json, topic_json
from topicforest.server.rpc import Handler, Host, request

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer


def setup(server: TopicForestServer) -> None:
    for verb, handler in ROUTES.items():
        request(server, PREFIX + verb)(handler)


def list_topics(ls: Host, p: wire.ListTopicsParams) -> wire.ListTopicsResult:
    memory = ls.workspaces.resolve(p.workspace_uri)
    topics = [topic_json(t) for t in memory.topics()]
    upcoming = memory.next_render(p.thread_id)
    return {
        "topics": topics,
        "budget": upcoming.budget,
        "used": upcoming.tokens,
        "threadId": p.thread_id,
        "rendered": rendered_topics_json(upcoming),
        "omittedTopics": list(upcoming.omitted_topics),
        "threadMessages": len(upcoming.hot_message_ids),
    }


def preview_topic(ls: Host, p: wire.PreviewTopicParams) -> wire.PreviewTopicResult:
    memory = ls.workspaces.resolve(p.workspace_uri)
    topic, messages = memory.preview(p.topic_id)
    return {"topic": topic_json(topic), "messages": messages_json(memory.attached(messages))}


def expand_topic(ls: Host, p: wire.ExpandTopicParams) -> wire.ExpandTopicResult:
    memory = ls.workspaces.resolve(p.workspace_uri)
    change = memory.expand(p.topic_id, p.thread_id)
    return {
        "topic": topic_json(change.topic),
        "messages": messages_json(memory.attached(change.sent)),
        "pushedOut": change.pushed_out,
    }


def collapse_topic(ls: Host, p: wire.CollapseTopicParams) -> wire.CollapseTopicResult:
    return {"topic": topic_json(ls.workspaces.resolve(p.workspace_uri).collapse(p.topic_id))}


def drop_topic(ls: Host, p: wire.DropTopicParams) -> wire.DropTopicResult:
    return {"topic": topic_json(ls.workspaces.resolve(p.workspace_uri).drop(p.topic_id))}


def restore_topic(ls: Host, p: wire.RestoreTopicParams) -> wire.RestoreTopicResult:
    return {"topic": topic_json(ls.workspaces.resolve(p.workspace_uri).restore(p.topic_id))}


def pin_topic(ls: Host, p: wire.PinTopicParams) -> wire.PinTopicResult:
    change = ls.workspaces.resolve(p.workspace_uri).pin(p.topic_id, p.pinned, p.thread_id)
    return {"topic": topic_json(change.topic), "pushedOut": change.pushed_out}


def search_topics(ls: Host, p: wire.SearchTopicsParams) -> wire.SearchTopicsResult:
    found = ls.workspaces.resolve(p.workspace_uri).search(p.query, p.limit)
    return {"results": [{"topic": topic_json(t), "score": score} for t, score in found]}


ROUTES: dict[str, Handler] = {
    "listTopics": list_topics,
    "previewTopic": preview_topic,
    "expandTopic": expand_topic,
    "collapseTopic": collapse_topic,
    "dropTopic": drop_topic,
    "restoreTopic": restore_topic,
    "pinTopic": pin_topic,
    "searchTopics": search_topics,
}
