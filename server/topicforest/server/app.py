"""Wiring only: build the server, register the features, run it over stdio or TCP."""

from __future__ import annotations

import logging

from topicforest.server import features
from topicforest.server.jsonrpc import warm_up
from topicforest.server.logbridge import protect_stdout, setup_logging
from topicforest.server.server import TopicForestServer


def create_server(log_level: int = logging.INFO) -> TopicForestServer:
    server = TopicForestServer()
    features.setup(server)
    warm_up(server.protocol._converter)
    server.log_bridge = setup_logging(server, log_level)
    return server


def run_stdio(log_level: int = logging.INFO) -> None:
    stdin, stdout = protect_stdout()  # before anything can print
    create_server(log_level).start_io(stdin, stdout)


def run_tcp(host: str, port: int, log_level: int = logging.INFO) -> None:
    create_server(log_level).start_tcp(host, port)
