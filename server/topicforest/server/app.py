"""Wiring only: build the server, register the features, run it over TCP (stdio: see `early`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from topicforest.server.features import (
    chat,
    context,
    documents,
    lifecycle,
    models,
    threads,
    topics,
)
from topicforest.server.jsonrpc import warm_up
from topicforest.server.logbridge import setup_logging
from topicforest.server.server import TopicForestServer
from topicforest.workspace.registry import Workspaces

FEATURES = (lifecycle, documents, topics, context, threads, chat, models)


def create_server(
    log_level: int = logging.INFO,
    workspaces: Workspaces | None = None,
    backlog: Iterable[logging.LogRecord] = (),
) -> TopicForestServer:
    """The server; `workspaces` and log `backlog` come from `early` when it answered first."""
    server = TopicForestServer(workspaces)
    for feature in FEATURES:
        feature.setup(server)
    warm_up(server.protocol.converter)
    server.log_bridge = setup_logging(server, log_level, backlog)
    return server


def run_tcp(host: str, port: int, log_level: int = logging.INFO) -> None:
    create_server(log_level).start_tcp(host, port)
