"""A team memory on a real PostgreSQL: real server processes, two clones of one repository.

Each "machine" is its own clone (folder) of one repository, its remote written differently,
so the windows meet only through the repository identity. The store's own behaviour on
PostgreSQL is covered by the parametrized store suite; here: live sharing between processes
(LISTEN/NOTIFY), the advisory-lock lease, per-person threads, and a database restart.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from topicforest.testing.postgres import TempPostgres, wait_until_reachable
from topicforest.testing.stub_llm import ThreadedStubLLM

from ..server.conftest import Client
from .test_cross_window import Windows, chat_turns, pid, settled_topics, until

REMOTES = ("git@github.com:example/shop.git", "https://github.com/example/shop")


@pytest.fixture
def stub() -> Iterator[ThreadedStubLLM]:
    with ThreadedStubLLM(chunks=2) as running:
        yield running


def clone(folder: Path, remote: str) -> Path:
    folder.mkdir(parents=True)
    for args in (["init", "-q"], ["remote", "add", "origin", remote]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)
    return folder


class Team(Windows):
    """Editor windows (server processes) on clones of one repository, sharing one database;
    `store()` opens the memory from a clone of its own, as a teammate's process would."""

    def __init__(self, tmp_path: Path, stub: ThreadedStubLLM, url: str) -> None:
        super().__init__(clone(tmp_path / "observer", REMOTES[0]), stub, url)

    async def open(
        self,
        name: str,
        *,
        folder: Path | None = None,
        user: str | None = "ann",
        remote: str = REMOTES[0],
    ) -> Client:
        folder = folder or clone(self.folder.parent / f"clone-{name}", remote)
        return await super().open(name, folder=folder, user=user)


@pytest.fixture
async def team(
    tmp_path: Path, stub: ThreadedStubLLM, postgres: TempPostgres
) -> AsyncIterator[Team]:
    url = postgres.create_database(f"team_{uuid.uuid4().hex[:12]}")
    opened = Team(tmp_path, stub, url)
    yield opened
    await opened.close()


async def test_a_conversation_in_a_becomes_topics_in_b_and_a_drop_in_b_reaches_a(
    team: Team,
) -> None:
    a = await team.open("a", user="ann", remote=REMOTES[0])
    await until(lambda: team.maintainer_pid() == pid(a))
    b = await team.open("b", user="bob", remote=REMOTES[1])  # another clone, another person
    await chat_turns(a, "ann-1", 20)
    topics = await settled_topics(team.stub, a, b)  # b sees a's conversation as topics
    assert topics and all(t["summary"] for t in topics)

    # Threads are per person: bob does not list ann's thread nor read its history.
    assert [t["threadId"] for t in (await a.call("listThreads"))["threads"]] == ["ann-1"]
    assert (await b.call("listThreads"))["threads"] == []
    assert (await b.call("threadHistory", {"threadId": "ann-1"}))["messages"] == []

    topic = topics[0]["id"]
    a.notes["topicForest/topicsChanged"].clear()
    await b.call("dropTopic", {"topicId": topic})
    note = await a.wait_for(
        "topicForest/topicsChanged", lambda p: p["reason"] == "external", timeout=5
    )
    assert note["workspaceUri"] == a.workspace_uri
    listed = (await a.call("listTopics"))["topics"]
    assert any(t["id"] == topic and t["dropped"] for t in listed)  # shared: dropped for ann too


async def test_kill_9_of_the_maintainer_hands_the_lease_over(team: Team) -> None:
    a = await team.open("a")
    await until(lambda: team.maintainer_pid() == pid(a))
    b = await team.open("b", remote=REMOTES[1])
    acked = await chat_turns(a, "a", 10)
    os.kill(pid(a), signal.SIGKILL)
    started = time.monotonic()
    await until(lambda: team.maintainer_pid() == pid(b), timeout=15)
    handover = time.monotonic() - started
    acked += await chat_turns(b, "b", 10)  # b now graduates and summarizes for everyone
    await until(
        lambda: any(r.model == "summary-b" and r.ok for r in team.stub.calls("summary")),
        timeout=30,
    )
    store = team.store(user="ann")
    stored = {r[0] for r in store.conn.execute("SELECT id FROM messages")}
    store.close()
    assert set(acked) <= stored
    assert handover < 10, handover


async def test_acknowledged_turns_survive_a_database_restart_mid_conversation(
    team: Team, postgres: TempPostgres
) -> None:
    a = await team.open("a")
    acked = await chat_turns(a, "a", 6)
    topics = await settled_topics(team.stub, a)  # upkeep is quiet
    postgres.halt("immediate")  # a crash: no shutdown checkpoint
    try:
        error = await a.rpc_error("chat", {"threadId": "a", "turnId": "down", "message": "hi?"})
        assert error.code == -32005 and "unreachable" in str(error)
        assert (await a.call("listTopics"))["topics"] == topics  # served from memory
    finally:
        postgres.resume()
    wait_until_reachable(postgres.url())
    acked += await chat_turns(a, "a-again", 6)  # the same window works again
    store = team.store(user="ann")
    stored = {r[0] for r in store.conn.execute("SELECT id FROM messages")}
    contents = [r[0] for r in store.conn.execute("SELECT content FROM messages")]
    store.close()
    assert set(acked) <= stored
    assert "hi?" not in contents  # refused, so never acknowledged; nothing half-written
