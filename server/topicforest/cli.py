"""The `topicforest` command. Each area registers its own subcommands (see COMMAND_MODULES)."""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
from collections.abc import Sequence
from importlib import metadata

from topicforest import __version__

# Modules exposing `register(subparsers)`; each subparser sets `func(args) -> int`.
COMMAND_MODULES = (
    "topicforest.server.commands",
    "topicforest.store.commands",
    "topicforest.mcp.commands",
)


def version_text() -> str:
    """This package's version and what it runs on, read from metadata (importing litellm would
    take seconds)."""
    parts = [f"Python {platform.python_version()}"]
    for dist in ("pygls", "litellm"):
        try:
            parts.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{dist} missing")
    return f"topicforest {__version__} ({', '.join(parts)})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="topicforest", description="Union-find chat memory for coding assistants."
    )
    parser.add_argument("--version", action="version", version=version_text())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # a bare `topicforest` is what an editor launches: serve on stdio
        args = parser.parse_args(["serve"])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
