"""One module per feature, each with `setup(server)` registering its short handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicforest.server.features import chat, context, documents, lifecycle, threads, topics

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer

FEATURES = (lifecycle, documents, topics, context, threads, chat)


def setup(server: TopicForestServer) -> None:
    for feature in FEATURES:
        feature.setup(server)
