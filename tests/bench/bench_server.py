"""JSON-RPC figures of the real server process (run as a script; `make bench` runs it).

- initialize round trip (process already started and idle), and spawn-to-initialized;
- listTopics / renderContext round trips, p50/p95, with 10,000 stored messages;
- the chat critical path (time from receiving `chat` to the first byte sent to the model),
  p50/p99, with a short and with a 10,000-message history, three ways: inside the server (the
  handler's receipt to aiohttp's "request headers sent" hook, logged at DEBUG); from this client
  writing the request to that first byte (adds the pipe, pygls' parsing and any queueing in the
  server); and from this client writing to the stub model's handler starting (adds the HTTP hop
  and the stub's parsing, in a thread of this process). Turns back to back (the next question
  the moment a reply ends: it can queue behind the previous turn's upkeep), and at 10,000
  messages also paced (PAUSE seconds between turns, as a person reads and types). With the
  in-server figure, the event loop thread's CPU time over the same span: on a shared machine the
  wall time adds whatever other processes take of the CPU (in scheduler ticks of ~4 ms), so two
  commits are compared by their CPU time, not by one run's wall-clock p99.

Targets (issue 3): initialize <= 300 ms, listTopics <= 5 ms p95, critical path <= 10 ms p99.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any, NamedTuple

from topicforest.server.stdio_client import SERVE, RpcError, StdioClient
from topicforest.testing.stub_llm import ThreadedStubLLM

P = "topicForest/"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def ms(values: list[float], *qs: float) -> str:
    return ", ".join(f"p{q:g} {1000 * percentile(values, q):.2f} ms" for q in qs)


def timed(fn: Callable[[], Any], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def sample_texts() -> list[str]:
    text = files("topicforest.data").joinpath("sample_conversation.json").read_text("utf-8")
    return [m["content"] for m in json.loads(text)["messages"] if len(m["content"]) > 80]


TEXTS = sample_texts()
TURN_LOG = re.compile(
    r"turn (\S+): ([0-9.]+) ms from receipt to the first byte sent at ([0-9.]+)"
    r" \(append ([0-9.]+) ms, render ([0-9.]+) ms, send ([0-9.]+) ms; on CPU ([0-9.]+) ms\)"
)
SERVE_DEBUG = [*SERVE, "--log-level", "DEBUG"]
PAUSE = 0.25  # seconds between turns in the paced run: a reply read, a question typed (at least)


def load_average() -> str:
    """The 1/5/15-minute load averages (Linux), which a wall-clock figure depends on."""
    with contextlib.suppress(OSError):
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "unknown"


def message(i: int) -> str:
    return f"{TEXTS[i % len(TEXTS)]} (take {i})"


def ready(client: StdioClient) -> None:
    """Wait until the process answers at all (imports done), so initialize is timed alone."""
    with contextlib.suppress(RpcError):
        client.request(P + "notAMethod", {}, timeout=60)


def warmed_up(client: StdioClient, timeout: float = 60.0) -> None:
    """Wait until the server has imported litellm in the background (its warm-up): turns in the
    seconds before share the interpreter with that import (`first_turns` shows them)."""
    end = time.perf_counter() + timeout
    while not any(
        method == "window/logMessage" and "litellm ready" in params["message"]
        for method, params in list(client.notifications)
    ):
        if time.perf_counter() > end:
            raise TimeoutError("the server did not finish its litellm warm-up")
        time.sleep(0.05)


class LoggedTurn(NamedTuple):
    """One turn as the server logged it: seconds from the handler receiving it to the request's
    first byte written, the wall-clock time of that byte, and the seconds of its parts."""

    seconds: float
    sent_at: float
    append: float
    render: float
    send: float
    on_cpu: float  # the event loop's thread on a CPU meanwhile (far below `seconds`: waiting)


def server_log(client: StdioClient, prefix: str, first: int) -> dict[str, LoggedTurn]:
    """Per turn the server logged (window/logMessage, DEBUG) from notification `first` on."""
    out = {}
    for method, params in client.notifications[first:]:
        if method == "window/logMessage":
            found = TURN_LOG.search(params["message"])
            if found and found.group(1).startswith(prefix):
                total, sent_at, *parts = (float(g) for g in found.groups()[1:])
                seconds = [x / 1000 for x in (total, *parts)]  # logged in milliseconds
                out[found.group(1)] = LoggedTurn(seconds[0], sent_at, *seconds[1:])
    return out


def fill(client: StdioClient, total: int, batch: int = 32, owner: str = "") -> None:
    """Chat until `total` messages are stored (two per turn), `batch` turns in flight, in four
    threads whose ids start with `owner` (a thread is written by its owner only)."""
    turns = total // 2
    for start in range(0, turns, batch):
        ids = [
            client.send(
                P + "chat",
                {"threadId": f"{owner}t{i % 4}", "turnId": f"fill-{i}", "message": message(i)},
            )
            for i in range(start, min(turns, start + batch))
        ]
        for msg_id in ids:
            client.wait(msg_id, timeout=120)
        if (start // batch) % 20 == 0:
            print(f"  … {2 * (start + batch)} messages", file=sys.stderr, flush=True)


def critical_path(
    client: StdioClient, stub: ThreadedStubLLM, runs: int, pause: float = 0.0, label: str = ""
) -> None:
    """Chat turns one after another (`pause` seconds between a reply and the next question);
    prints the three views of each turn's critical path."""
    print(f"{label} (load average {load_average()})")
    first = len(client.notifications)  # this run's turn ids repeat earlier runs': read its own
    sent_at, at_stub = {}, {}
    for i in range(runs):
        time.sleep(pause)
        turn = f"c{i}"
        before = len(stub.requests)
        sent_at[turn] = time.time()
        client.request(P + "chat", {"threadId": "crit", "turnId": turn, "message": message(i)})
        at_stub[turn] = next(r for r in stub.requests[before:] if r.kind == "chat").started
    logged = server_log(client, "c", first)
    inside = [logged[t][0] for t in sent_at]
    to_byte = [logged[t][1] - sent_at[t] for t in sent_at]
    to_stub = [at_stub[t] - sent_at[t] for t in sent_at]
    on_cpu = [logged[t].on_cpu for t in sent_at]
    print(f"  in the server (handler -> first byte written): {ms(inside, 50, 99)}")
    print(f"    of which its thread on a CPU (load-proof):  {ms(on_cpu, 50, 99)}")
    print(f"  client write -> first byte written (+ pipe):   {ms(to_byte, 50, 99)}")
    print(f"  client write -> stub handler (+ HTTP parse):   {ms(to_stub, 50, 99)}")


def initialize_round_trips(runs: int) -> list[float]:
    """initialize alone: the process has finished importing and waits on stdin."""
    out = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(runs):
            with StdioClient() as client:
                ready(client)
                start = time.perf_counter()
                client.initialize([Path(folder)], {"storePath": str(Path(folder) / ".store")})
                out.append(time.perf_counter() - start)
    return out


def first_turns(runs: int) -> None:
    """A new window's first question, asked the moment the server has initialized: how long
    from spawning the process until the model receives the request, and until the reply."""
    to_stub, to_reply = [], []
    with ThreadedStubLLM(chunks=2) as stub:
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as folder:
                spawned = time.time()
                with StdioClient(env=stub.env) as client:
                    settings = {"chatModel": "openai/bench", "apiBase": stub.base_url}
                    client.initialize([Path(folder)], {**settings, "storePath": folder})
                    before = len(stub.requests)
                    question = {"threadId": "t", "turnId": "first", "message": message(3)}
                    client.request(P + "chat", question)
                    to_reply.append(time.time() - spawned)
                    first = next(r for r in stub.requests[before:] if r.kind == "chat")
                    to_stub.append(first.started - spawned)
    print(f"first question at once after start ({runs} processes):")
    print(f"  spawn -> request at the model: {ms(to_stub, 50, 100)}")
    print(f"  spawn -> reply:                {ms(to_reply, 50, 100)}")


def start_turns(processes: int, turns: int = 15, pause: float = 0.2) -> list[float]:
    """The first `turns` questions of a new window, `pause` seconds apart from `initialized` on
    (while the server's start-up work runs: litellm's warm-up, the first upkeep rounds): the
    critical path in the server of turns 2..`turns`, over `processes` fresh processes."""
    inside: list[float] = []
    with ThreadedStubLLM(chunks=2) as stub:
        for _ in range(processes):
            with (
                tempfile.TemporaryDirectory() as folder,
                StdioClient(SERVE_DEBUG, env=stub.env) as client,
            ):
                settings = {"chatModel": "openai/bench", "apiBase": stub.base_url}
                client.initialize([Path(folder)], {**settings, "storePath": folder})
                for i in range(turns):
                    question = {"threadId": "t", "turnId": f"s{i}", "message": message(i)}
                    client.request(P + "chat", question)
                    time.sleep(pause)
                logged = server_log(client, "s", 0)
                inside += [logged[f"s{i}"][0] for i in range(1, turns)]
    print(f"turns 2-{turns} after start, {pause} s apart, {processes} processes, in the server:")
    print(f"  handler -> first byte written: {ms(inside, 50, 99, 100)}")
    return inside


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument(
        "--start-only", action="store_true", help="only the turns in the first seconds"
    )
    args = parser.parse_args()
    start_turns(6)
    if args.start_only:
        return 0

    warm = initialize_round_trips(5)
    spawned = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(3):
            start = time.perf_counter()
            with StdioClient() as client:
                client.initialize([Path(folder)], {"storePath": str(Path(folder) / ".store")})
                spawned.append(time.perf_counter() - start)
    print(f"initialize round trip (idle process): {ms(warm, 50, 100)}")
    print(f"spawn + imports + initialize:         {ms(spawned, 50, 100)}")
    first_turns(5)

    with ThreadedStubLLM(chunks=2) as stub, tempfile.TemporaryDirectory() as folder:
        client = StdioClient(SERVE_DEBUG, env=stub.env)
        try:
            client.initialize(
                [Path(folder)],
                {
                    "chatModel": "openai/bench",
                    "apiBase": stub.base_url,
                    "historyBudget": 2048,
                    "storePath": str(Path(folder) / ".store"),
                },
            )
            client.request(P + "chat", {"threadId": "w", "turnId": "w", "message": "warm up"})
            critical_path(
                client, stub, 100, label="chat critical path, while litellm is imported at start:"
            )
            warmed_up(client)
            critical_path(
                client, stub, 300, label="chat critical path, short history, back to back:"
            )
            client.notifications.clear()

            started = time.perf_counter()
            fill(client, args.messages)
            stored = sum(t["messageCount"] for t in client.request(P + "listThreads")["threads"])
            print(f"stored {stored} messages in {time.perf_counter() - started:.1f} s (via chat)")
            settled = time.perf_counter()
            while any(t["pending"] for t in client.request(P + "listTopics", {})["topics"]):
                if time.perf_counter() - settled > 120:
                    print("  (summaries still pending after 120 s; measuring anyway)")
                    break
                time.sleep(0.2)
            print(f"background summaries settled {time.perf_counter() - settled:.1f} s later")

            listing = timed(lambda: client.request(P + "listTopics", {}), args.runs)
            render = timed(
                lambda: client.request(
                    P + "renderContext", {"query": message(7), "threadId": "t1"}
                ),
                args.runs,
            )
            topics = len(client.request(P + "listTopics", {})["topics"])
            print(f"listTopics round trip ({topics} topics):  {ms(listing, 50, 95)}")
            print(f"renderContext round trip:             {ms(render, 50, 95)}")
            label = f"chat critical path, {stored} messages"
            critical_path(client, stub, 300, label=f"{label}, back to back:")
            critical_path(client, stub, 100, PAUSE, f"{label}, {PAUSE} s between turns:")
        finally:
            client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
