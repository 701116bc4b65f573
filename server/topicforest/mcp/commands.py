"""`topicforest mcp`: the MCP server on stdio (what an agent launches), for one workspace."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

from topicforest.store.commands import add_location
from topicforest.workspace.settings import Settings

INSTALL = "pip install 'topicforest[mcp]'"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the workspace's memory to agents as read-only MCP tools (stdio)",
        description=__doc__,
    )
    add_location(parser)
    parser.add_argument(
        "--user", help="whose threads, in a team memory (topicForest.user; default: the OS user)"
    )
    parser.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    # stdout is the protocol: every log line goes to stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    folder = Path(args.workspace).expanduser().resolve()
    if not folder.is_dir():
        print(f"topicforest mcp: {folder} is not a folder", file=sys.stderr)
        return 2
    try:
        settings = Settings(
            store_path=str(Path(args.store_path).expanduser().resolve())
            if args.store_path
            else None,
            store_url=args.store_url or None,
            user=args.user,
        )
    except ValueError as exc:
        print(f"topicforest mcp: {exc}", file=sys.stderr)
        return 2
    try:
        from topicforest.mcp.server import run_stdio  # the SDK: the `mcp` extra
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith("mcp"):
            raise
        print(f"topicforest mcp needs the MCP SDK: {INSTALL} ({exc})", file=sys.stderr)
        return 1
    asyncio.run(run_stdio(folder, settings))
    return 0
