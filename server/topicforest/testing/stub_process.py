"""The loopback stub as a process: `python -m topicforest.testing.stub_llm --port 0` prints its
base URL on the first stdout line and serves until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Sequence

from topicforest.testing.stub_llm import Latency, StubLLM


def _parse_latency(text: str) -> Latency:
    if ":" in text:
        lo, hi = text.split(":", 1)
        return (float(lo), float(hi))
    return float(text)


async def _serve(args: argparse.Namespace, ready: Callable[[str], None]) -> None:
    stub = StubLLM(
        host=args.host,
        port=args.port,
        latency=_parse_latency(args.latency),
        chunk_latency=args.chunk_latency,
        chunks=args.chunks,
        replies=args.reply or (),
    )
    stub.config.slow_seconds = args.slow_seconds
    stub.config.api_key = args.api_key
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with stub:
        ready(stub.base_url)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topicforest.testing.stub_llm",
        description="Loopback OpenAI-compatible stub; prints its base URL on the first line.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", default="0", help="seconds per call, or LO:HI")
    parser.add_argument("--chunk-latency", type=float, default=0.0, help="seconds per chunk")
    parser.add_argument("--chunks", type=int, default=4, help="content chunks per stream")
    parser.add_argument("--reply", action="append", help="scripted chat reply (repeatable)")
    parser.add_argument(
        "--slow-seconds", type=float, default=10.0, help='wait of a "slow" model\'s chat reply'
    )
    parser.add_argument("--api-key", help="refuse calls without this key (401)")
    args = parser.parse_args(argv)

    def ready(url: str) -> None:
        sys.stdout.write(url + "\n")
        sys.stdout.flush()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, ready))
    return 0


if __name__ == "__main__":
    sys.exit(main())
