"""Topic methods: list, preview, expand/collapse, drop/restore, pin, search."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topicforest.server.protocol import PREFIX, messages_json, rendered_topics_json, topic_json
from topicforest.server.rpc import Host, request

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer

Params = dict[str, Any]


def setup(server: TopicForestServer) -> None:
    for verb, handler in (
        ("listTopics", list_topics),
        ("previewTopic", preview_topic),
        ("expandTopic", expand_topic),
        ("collapseTopic", collapse_topic),
        ("dropTopic", drop_topic),
        ("restoreTopic", restore_topic),
        ("pinTopic", pin_topic),
        ("searchTopics", search_topics),
    ):
        request(server, PREFIX + verb)(handler)


def list_topics(ls: Host, p: Params) -> Params:
    memory = ls.workspaces.resolve(p["workspaceUri"])
    topics = [topic_json(t) for t in memory.topics()]
    upcoming = memory.next_render(p["threadId"])
    return {
        "topics": topics,
        "budget": upcoming.budget,
        "used": upcoming.tokens,
        "threadId": p["threadId"],
        "rendered": rendered_topics_json(upcoming),
        "omittedTopics": list(upcoming.omitted_topics),
    }


def preview_topic(ls: Host, p: Params) -> Params:
    memory = ls.workspaces.resolve(p["workspaceUri"])
    topic, messages = memory.preview(p["topicId"])
    return {"topic": topic_json(topic), "messages": messages_json(memory.attached(messages))}


def expand_topic(ls: Host, p: Params) -> Params:
    memory = ls.workspaces.resolve(p["workspaceUri"])
    topic, messages = memory.expand(p["topicId"])
    return {"topic": topic_json(topic), "messages": messages_json(memory.attached(messages))}


def collapse_topic(ls: Host, p: Params) -> Params:
    return {"topic": topic_json(ls.workspaces.resolve(p["workspaceUri"]).collapse(p["topicId"]))}


def drop_topic(ls: Host, p: Params) -> Params:
    return {"topic": topic_json(ls.workspaces.resolve(p["workspaceUri"]).drop(p["topicId"]))}


def restore_topic(ls: Host, p: Params) -> Params:
    return {"topic": topic_json(ls.workspaces.resolve(p["workspaceUri"]).restore(p["topicId"]))}


def pin_topic(ls: Host, p: Params) -> Params:
    memory = ls.workspaces.resolve(p["workspaceUri"])
    return {"topic": topic_json(memory.pin(p["topicId"], p["pinned"]))}


def search_topics(ls: Host, p: Params) -> Params:
    found = ls.workspaces.resolve(p["workspaceUri"]).search(p["query"], p["limit"])
    return {"results": [{"topic": topic_json(t), "score": score} for t, score in found]}
