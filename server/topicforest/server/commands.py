"""`topicforest serve`: the language server on stdio (what editors launch) or TCP (debugging)."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from typing import Any


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (a name other than localhost is not
    assumed to be: it may resolve anywhere)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the language server (stdio by default)", description=__doc__
    )
    parser.add_argument(
        "--tcp", type=_address, metavar="HOST:PORT", help="listen on TCP instead of stdio"
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="level of the server's own logs sent to the client (default INFO)",
    )
    parser.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    level = getattr(logging, args.log_level)
    if args.tcp:
        from topicforest.server import app  # imported late: `topicforest --help` stays instant

        host, port = args.tcp
        if not loopback(host):
            print(
                f"topicforest serve: warning: listening on {host}:{port}, which other machines "
                "can reach, with no authentication: anyone who connects can read and change "
                "this memory and chat on your API key. Use 127.0.0.1 unless you mean it.",
                file=sys.stderr,
                flush=True,
            )
        app.run_tcp(host, port, level)
    else:
        from topicforest.server import early  # answers first requests while pygls loads

        return early.run_stdio(level)
    return 0
