"""The server's name and version, as `initialize` announces them (early and pygls alike)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

SERVER_NAME = "topicforest"


def server_version() -> str:
    try:
        return version("topicforest")
    except PackageNotFoundError:
        return "0"
