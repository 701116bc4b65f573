"""Team memory on a real PostgreSQL: 4 server processes writing one shared memory (`make bench`).

- fill: 4 real `topicforest serve` processes (one repository, four people) chat concurrently
  until the memory holds --messages messages (default 4,000, a few minutes here; --full: 100,000);
- the chat critical path inside each server (receipt to the model request's first byte),
  p50/p99, each row starting once the servers are at rest (caught up with the fill's or the
  last row's graduation, re-clustering and summaries: the fill writes far faster than people
  chat), while the four chat at once (back to back, then
  with pauses between turns as people chat: random, 0.25 s on average, so that the four do not
  type in lockstep), then while one chats and the three others load its commits; with
  where it went (append, render, send) and how much of it the event loop's thread was on a CPU
  (wall time far above that: the turn waited, for the database or for a CPU);
- window open: a fifth server process spawned → its first `listTopics` answer (median, max);
- cross-window notification: a drop in one window → `topicsChanged` (external) received by each
  of the other three clients, p50/p95;
- RSS per server process (and its litellm worker) and the database's size.

`--store sqlite` runs the same four windows on one machine's SQLite file, for comparison.

Skips (exit 0, saying why) when PostgreSQL or psycopg is not available.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench_server import PAUSE, SERVE_DEBUG, P, fill, message, ms, server_log

from topicforest.server.stdio_client import StdioClient
from topicforest.testing.stub_llm import ThreadedStubLLM

WRITERS = 4
REMOTE = "git@github.com:example/shop.git"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """CPU time a process (and its children: the litellm worker) has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return own / os.sysconf("SC_CLK_TCK") + sum(cpu_seconds(c) for c in children(pid))


def settle(clients: list[StdioClient], every: float = 5.0, limit: float = 600.0) -> float:
    """Wait until the servers are at rest, done with the backlog the fill or the last row left
    them: together under 10% of a CPU over `every` seconds (or `limit` passed); seconds waited."""
    started = time.perf_counter()
    used = sum(cpu_seconds(c.process.pid) for c in clients)
    while time.perf_counter() - started < limit:
        time.sleep(every)
        now = sum(cpu_seconds(c.process.pid) for c in clients)
        if now - used < 0.1 * every:
            break
        used = now
    return time.perf_counter() - started


def children(pid: int) -> list[int]:
    """A process's children (the server's litellm worker)."""
    tasks = Path(f"/proc/{pid}/task")
    return [int(c) for t in tasks.iterdir() for c in (t / "children").read_text().split()]


Store = dict[str, str]  # the settings that choose the memory's store


def settings(store: Store, stub: ThreadedStubLLM, user: str) -> dict[str, Any]:
    return {
        "chatModel": "openai/stub-chat",
        "apiBase": stub.base_url,
        "historyBudget": 512,
        "user": user,
        **store,
    }


def open_window(folder: Path, store: Store, stub: ThreadedStubLLM, user: str) -> StdioClient:
    client = StdioClient(SERVE_DEBUG, env=stub.env)
    client.initialize([folder], settings(store, stub, user))
    return client


def first_list(folder: Path, store: Store, stub: ThreadedStubLLM) -> float:
    """Seconds from spawning a server to its first listTopics answer."""
    start = time.perf_counter()
    client = StdioClient(env=stub.env)
    try:
        client.initialize([folder], settings(store, stub, "newcomer"))
        client.request(P + "listTopics", {})
        return time.perf_counter() - start
    finally:
        client.close()


def concurrently(clients: list[StdioClient], fn: Callable[[int, StdioClient], None]) -> None:
    """`fn(k, client)` for every client at once, each in a thread; the first failure raises."""
    with ThreadPoolExecutor(len(clients)) as pool:
        for done in [pool.submit(fn, k, c) for k, c in enumerate(clients)]:
            done.result()


def notification_latency(clients: list[StdioClient], rounds: int) -> tuple[list[float], int]:
    """A drop (then a restore) in window 0; seconds until each other window's client hears,
    and how many did not hear within 10 s."""
    arrivals: list[list[float]] = [[] for _ in clients]
    for k, client in enumerate(clients[1:], start=1):

        def heard(method: str, params: Any, k: int = k) -> None:
            if method == P + "topicsChanged" and params.get("reason") == "external":
                arrivals[k].append(time.perf_counter())

        client.on_notification = heard
    topic = clients[0].request(P + "listTopics", {})["topics"][0]["id"]
    latencies, missed = [], 0
    for i in range(rounds):
        for k in range(1, len(clients)):
            arrivals[k].clear()
        method = "dropTopic" if i % 2 == 0 else "restoreTopic"
        sent = time.perf_counter()
        clients[0].request(P + method, {"topicId": topic})
        deadline = time.monotonic() + 10
        while any(not arrivals[k] for k in range(1, len(clients))):
            if time.monotonic() > deadline:
                break
            time.sleep(0.002)
        heard_by = [k for k in range(1, len(clients)) if arrivals[k]]
        missed += len(clients) - 1 - len(heard_by)
        latencies += [arrivals[k][0] - sent for k in heard_by]
        time.sleep(0.2)  # let upkeep and listTopics refreshes settle between rounds
    for client in clients[1:]:
        client.on_notification = None
    return latencies, missed


@contextlib.contextmanager
def team_store(kind: str, tmp: Path) -> Iterator[tuple[Store, Callable[[], int]] | None]:
    """The settings that put the 4 windows' memory on `kind`, and its size in bytes; None
    (after saying why) when PostgreSQL cannot run here."""
    if kind == "sqlite":  # the same 4 windows on one machine, sharing the workspace's file
        directory = tmp / "memories"
        yield (
            {"storePath": str(directory)},
            lambda: sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()),
        )
        return
    try:
        import psycopg

        from topicforest.testing.postgres import TempPostgres, Unavailable

        server = TempPostgres().start()
    except (ImportError, Unavailable) as exc:
        print(f"skipped: PostgreSQL is not available here ({exc})")
        yield None
        return
    try:
        url = server.create_database("bench")

        def size() -> int:
            with psycopg.connect(url) as conn:
                row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
            assert row is not None
            return int(row[0])

        yield {"storeUrl": url}, size
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--full", action="store_true", help="100,000 messages (an hour or more)")
    parser.add_argument(
        "--turns", type=int, default=400,
        help="critical-path turns per window (a p99 of 4 x 400 is the 16th slowest turn)",
    )  # fmt: skip
    parser.add_argument(
        "--store", choices=("postgresql", "sqlite"), default="postgresql",
        help="sqlite: the same four windows on one machine's SQLite file, for comparison",
    )  # fmt: skip
    args = parser.parse_args()
    total = 100_000 if args.full else args.messages
    # Stopped (a CI timeout, kill): unwind, so the PostgreSQL server and the windows stop too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with (
        tempfile.TemporaryDirectory() as tmp,
        team_store(args.store, Path(tmp)) as chosen,
        ThreadedStubLLM(chunks=2) as stub,
    ):
        if chosen is None:
            return 0
        store, size = chosen
        print(f"store: {args.store}")
        folder = Path(tmp) / "shop"
        folder.mkdir()
        subprocess.run(["git", "-C", str(folder), "init", "-q"], check=True)
        subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", REMOTE], check=True)
        clients = [open_window(folder, store, stub, f"dev{k}") for k in range(WRITERS)]
        try:
            measure(clients, folder, store, stub, total, args.turns)
            print(f"database size: {size() / 2**20:.1f} MB for {total} messages")
        finally:
            for client in clients:
                client.close()
    return 0


def measure(
    clients: list[StdioClient], folder: Path, store: Store, stub: ThreadedStubLLM, total: int,
    turns_each: int,
) -> None:  # fmt: skip
    started = time.perf_counter()
    concurrently(clients, lambda k, c: fill(c, total // WRITERS, batch=8, owner=f"dev{k}-"))
    took = time.perf_counter() - started
    print(f"fill: {total} messages by {WRITERS} servers in {took:.0f} s "
          f"({total / took:.0f} messages/s)")  # fmt: skip
    print(f"caught up with the fill (upkeep: graduation, re-clustering, summaries, key lines) "
          f"in {settle(clients):.0f} s")  # fmt: skip
    # each chatting row starts from a team at rest, not from the previous row's backlog

    def chatting(who: list[int], label: str, pause: float = 0.0) -> None:
        """Each window in `who` chats `turns_each` turns, all at once, `pause` seconds on
        average between a reply and its next question (people do not type in lockstep);
        prints the critical path its server logged and where it went."""
        settle(clients)
        first = [len(c.notifications) for c in clients]

        def turns(k: int, client: StdioClient) -> None:
            think = random.Random(k)  # the same pauses in every run
            if k in who:
                for i in range(turns_each):
                    time.sleep(think.uniform(0, 2 * pause))
                    params = {"threadId": f"crit-{k}", "turnId": f"{label}{k}-{i}",
                              "message": message(i)}  # fmt: skip
                    client.request(P + "chat", params)

        concurrently(clients, turns)
        logged = [
            turn
            for k, c in enumerate(clients)
            for turn in server_log(c, f"{label}{k}-", first[k]).values()
        ]
        inside = [t.seconds for t in logged]
        how = "back to back"
        if pause:
            how = f"{pause} s on average between a reply and the next question"
        print(f"chat critical path in the server, {len(who)} of the {WRITERS} windows chatting "
              f"at once ({how}), {len(inside)} turns: {ms(inside, 50, 99)}")  # fmt: skip
        for part in ("append", "render", "send", "on_cpu"):
            print(f"  {part}: {ms([getattr(t, part) for t in logged], 50, 99)}")
        slowest = sorted(logged, reverse=True)[: max(1, len(logged) // 50)]
        print("  the slowest 2% (total = append + render + send; on CPU), ms: " + "; ".join(
            f"{1000 * t.seconds:.0f} = {1000 * t.append:.0f} + {1000 * t.render:.0f}"
            f" + {1000 * t.send:.0f}; {1000 * t.on_cpu:.0f}" for t in slowest))  # fmt: skip

    chatting(list(range(WRITERS)), "c")  # as fast as they can: the 2 vCPUs are saturated
    chatting(list(range(WRITERS)), "p", PAUSE)  # as people chat (fast ones)
    chatting([1], "s")  # maybe not the maintainer: the three others load each of its commits

    opens = [first_list(folder, store, stub) for _ in range(5)]
    print(
        f"window open -> first listTopics at {total} messages: median "
        f"{1000 * statistics.median(opens):.0f} ms, max {1000 * max(opens):.0f} ms"
    )

    latency, missed = notification_latency(clients, 30)
    print(f"drop in one window -> topicsChanged in the {WRITERS - 1} others: "
          f"{ms(latency, 50, 95)}, max {1000 * max(latency):.0f} ms, "
          f"{missed} not heard within 10 s")  # fmt: skip

    rss = [
        (rss_mb(c.process.pid), sum(rss_mb(child) for child in children(c.process.pid)))
        for c in clients
    ]
    print("RSS per server process (+ its litellm worker): "
          + ", ".join(f"{server:.0f} (+{worker:.0f}) MB" for server, worker in rss))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
