"""Durability under kill -9 (issue 11): acknowledged turns missing after a restart must be 0.

Seeded trials on one workspace store: a server chats with the loopback stub (graduation and
summaries running meanwhile, the history budget is small) and is killed with SIGKILL at a
random moment; the next trial's server, started on the same store, must list every turn the
previous one acknowledged (question and reply). TOPICFOREST_KILL_TRIALS sets the number of
trials (20 here; `make soak` runs 200).
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

from topicforest.server.stdio_client import RpcError, StdioClient
from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import HANG, SERVER_ENV

TRIALS = int(os.environ.get("TOPICFOREST_KILL_TRIALS", "20"))
SEED = 11


def start(folder: Path, stub: ThreadedStubLLM) -> StdioClient:
    client = StdioClient(env=SERVER_ENV)
    client.initialize(
        [folder],
        {"chatModel": "openai/stub", "apiBase": stub.base_url, "historyBudget": 256,
         "summaryModels": ["openai/stub-summary"], "storePath": str(folder / ".store")},
    )  # fmt: skip
    return client


def chat_until_killed(client: StdioClient, thread: str, acked: list[tuple[str, str]]) -> None:
    for turn in range(10_000):
        text = f"{thread} turn {turn}: why does store/db.py lock under two writers?"
        params = {"threadId": thread, "turnId": str(turn), "message": text}
        try:
            result = client.request("topicForest/chat", params, timeout=HANG)
        except (RpcError, OSError, ValueError):
            return  # killed: this turn was never acknowledged
        acked.append((text, result["reply"]))


def stored(client: StdioClient, thread: str) -> list[str]:
    result = client.request("topicForest/threadHistory", {"threadId": thread}, timeout=HANG)
    return [m["content"] for m in result["messages"]]


def test_kill_9_at_random_moments_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    rng = random.Random(SEED)  # the kill moments
    acknowledged: dict[str, list[tuple[str, str]]] = {}
    missing: list[str] = []
    with ThreadedStubLLM(chunks=3, chunk_latency=0.002) as stub:
        for trial in range(TRIALS + 1):
            client = start(tmp_path, stub)
            for thread, turns in acknowledged.items():  # the previous trials' turns
                contents = set(stored(client, thread))
                missing += [text for pair in turns for text in pair if text not in contents]
            if trial == TRIALS:
                client.close()
                break
            thread = f"trial-{trial}"
            acked = acknowledged.setdefault(thread, [])
            chatting = threading.Thread(target=chat_until_killed, args=(client, thread, acked))
            chatting.start()
            deadline = time.monotonic() + HANG
            while not acked and time.monotonic() < deadline:  # pygls loaded, turns flowing
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.4))  # then any moment of a turn or of upkeep
            client.process.kill()  # SIGKILL: no shutdown, no flush
            client.process.wait()
            chatting.join(HANG)
            client.close()
    total = sum(len(turns) for turns in acknowledged.values())
    assert total >= TRIALS  # the trials did acknowledge turns before being killed
    assert missing == [], f"{len(missing)} of {2 * total} acknowledged messages missing"
