"""Several real processes on one memory, on both backends: concurrent appends, lease takeover
after kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize.extractive import ExtractiveSummarizer

from .conftest import Memory, state_of

WORKER = Path(__file__).with_name("worker.py")


def spawn(memory: Memory, thread: str, count: int, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), memory.spec, thread, str(count), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def acknowledged(lines: list[str]) -> list[int]:
    return [int(line) for line in lines if line.strip().isdigit()]


def test_concurrent_appenders_store_every_acknowledged_message_once(memory: Memory) -> None:
    memory.open().close()
    workers = [spawn(memory, "alpha", 300, "--maintain"), spawn(memory, "beta", 300)]
    outputs = [w.communicate(timeout=120) for w in workers]
    for worker, (_out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
    acked = {k: acknowledged(out.splitlines()) for k, (out, _) in zip("ab", outputs, strict=True)}
    assert len(acked["a"]) == len(acked["b"]) == 300
    all_ids = acked["a"] + acked["b"]
    assert len(set(all_ids)) == 600  # ids never collide across processes

    store = memory.open()
    rows = store.conn.execute("SELECT id, thread_id, content FROM messages").fetchall()
    assert sorted(r[0] for r in rows) == sorted(all_ids)  # each stored exactly once
    by_id = {r[0]: (r[1], r[2]) for r in rows}
    for thread, key in (("alpha", "a"), ("beta", "b")):
        contents = [by_id[i][1] for i in acked[key]]
        assert contents == [c for c in contents if c.startswith(f"{thread} #")]
        assert [int(c.split("#")[1].split(":")[0]) for c in contents] == list(range(300))

    # Every message lands in exactly one topic once the threads flush, and a second process
    # sees exactly the same topics as the one that did the work.
    window = store.open_window()
    for thread in ("alpha", "beta"):
        window.flush_thread(thread)
    members = [m for root in window.topic_ids() for m in window.forest.members(root)]
    assert sorted(members) == sorted(all_ids)
    observer = memory.open().open_window()
    assert state_of(observer) == state_of(window)


def test_lease_is_exclusive_and_released_by_death(memory: Memory) -> None:
    memory.open().close()
    holder = spawn(memory, "holder", 0, "--maintain", "--forever")
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "lease"
    mine = memory.open()
    assert not mine.lease.try_acquire()
    assert mine.lease.holder_pid() == holder.pid
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    start = time.monotonic()
    while not mine.lease.try_acquire():
        assert time.monotonic() - start < 120, "the lease was not released by the dead holder"
        time.sleep(0.05)
    mine.close()


def test_kill_9_of_the_lease_holder_mid_write_loses_nothing(memory: Memory) -> None:
    memory.open().close()
    holder = spawn(memory, "holder", 0, "--maintain", "--forever")
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "lease"
    mine = memory.open()
    window = mine.open_window()
    my_ids = []
    holder_ids: list[int] = []
    for i in range(60):  # append alongside the holder's appends, graduations and summaries
        my_ids.append(window.append("mine", "user", f"mine #{i} about pg_isready healthchecks").id)
        line = holder.stdout.readline()
        if line.strip().isdigit():
            holder_ids.append(int(line))
    os.kill(holder.pid, signal.SIGKILL)  # while it is busy writing
    rest, _ = holder.communicate()
    holder_ids += acknowledged(rest.splitlines())
    assert len(holder_ids) >= 60

    start = time.monotonic()
    while not mine.lease.try_acquire():
        assert time.monotonic() - start < 120  # bounds a hang only
        time.sleep(0.05)
    assert mine.integrity_ok()
    stored = {r[0] for r in mine.conn.execute("SELECT id FROM messages")}
    assert set(my_ids) | set(holder_ids) <= stored
    # The new holder resumes maintenance where the dead one stopped.
    mine.refresh()
    window.graduate()
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))
    assert window.dirty_topic_ids() == []
    reopened = memory.open().open_window()
    assert state_of(reopened) == state_of(window)
    mine.close()
