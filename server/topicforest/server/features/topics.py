"""Topic methods: list, preview, expand/collapse, drop/restore, pin, search."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topicforest.server.protocol import PREFIX, message_json, topic_json
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
    budget = memory.window.config.history_budget
    return {"topics": topics, "budget": budget, "used": memory.used_tokens()}


def preview_topic(ls: Host, p: Params) -> Params:
    topic, messages = ls.workspaces.resolve(p["workspaceUri"]).preview(p["topicId"])
    return {"topic": topic_json(topic), "messages": [message_json(m) for m in messages]}


def expand_topic(ls: Host, p: Params) -> Params:
    topic, messages = ls.workspaces.resolve(p["workspaceUri"]).expand(p["topicId"])
    return {"topic": topic_json(topic), "messages": [message_json(m) for m in messages]}


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
