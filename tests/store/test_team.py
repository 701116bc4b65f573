"""A team memory on a real PostgreSQL: real server processes, two clones of one repository.

Each "machine" is its own clone (folder) of one repository, its remote written differently,
so the windows meet only through the repository identity. The store's own behaviour on
PostgreSQL is covered by the parametrized store suite; here: live sharing between processes
(LISTEN/NOTIFY), the advisory-lock lease, per-person threads, and a database restart.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from topicforest.store.errors import StoreError
from topicforest.testing.postgres import TempPostgres, free_port, wait_until_reachable
from topicforest.testing.stub_llm import ThreadedStubLLM
from topicforest.workspace.memory import WorkspaceMemory
from topicforest.workspace.reopen import delays
from topicforest.workspace.settings import Settings

from ..server.conftest import Client
from .conftest import synthetic
from .test_cross_window import Windows, chat_turns, pid, settled_topics, shared, until

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

    async def summarized() -> list[dict[str, Any]] | None:
        # b sees a's conversation as topics, summarized once the user pauses (settle)
        topics = await settled_topics(team.stub, a, b)
        return topics if all(t["summary"] for t in topics) else None

    topics = await until(summarized, timeout=120)

    # Threads are per person: bob does not list ann's thread nor read its history.
    assert [t["threadId"] for t in (await a.call("listThreads"))["threads"]] == ["ann-1"]
    assert (await b.call("listThreads"))["threads"] == []
    assert (await b.call("threadHistory", {"threadId": "ann-1"}))["messages"] == []

    topic = topics[0]["id"]
    a.notes["topicForest/topicsChanged"].clear()
    await b.call("dropTopic", {"topicId": topic})
    note = await a.wait_for(
        "topicForest/topicsChanged", lambda p: p["reason"] == "external", timeout=120
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
    await until(lambda: team.maintainer_pid() == pid(b), timeout=120)
    acked += await chat_turns(b, "b", 10)  # b now graduates and summarizes for everyone
    await until(
        lambda: any(r.model == "summary-b" and r.ok for r in team.stub.calls("summary")),
        timeout=120,
    )
    store = team.store(user="ann")
    stored = {r[0] for r in store.conn.execute("SELECT id FROM messages")}
    store.close()
    assert set(acked) <= stored


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
        assert shared((await a.call("listTopics"))["topics"]) == topics  # served from memory
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


async def test_a_window_opened_while_the_database_is_down_works_once_it_is_up(
    team: Team, postgres: TempPostgres
) -> None:
    earlier = team.store(user="ann")  # the memory already holds a conversation, as topics
    window = earlier.open_window()
    for role, text in synthetic(24):
        window.append("earlier", role, text)
    window.flush_thread("earlier")
    stored_topics = sorted(t.id for t in window.topics())
    earlier.close()
    assert stored_topics

    postgres.halt()
    try:
        a = await team.open("a")
        error = await a.rpc_error("chat", {"threadId": "a", "turnId": "down", "message": "hi?"})
        assert error.code == -32005
        assert "unreachable" in str(error) and "trying again in the background" in str(error)
        assert (await a.call("listTopics"))["topics"] == []  # still serving, from memory
        assert any("unreachable" in m.message for m in a.log_messages)  # the user is told
    finally:
        postgres.resume()

    # No reload: the window's memory opens in the background (1 s, 2 s, 4 s ... apart).
    await a.wait_for("topicForest/topicsChanged", lambda p: p["reason"] == "external", 40)
    await a.wait_for("topicForest/threadsChanged", timeout=120)
    assert sorted(t["id"] for t in (await a.call("listTopics"))["topics"]) == stored_topics
    assert [t["threadId"] for t in (await a.call("listThreads"))["threads"]] == ["earlier"]
    acked = await chat_turns(a, "a", 2)
    store = team.store(user="ann")
    contents = {r[0]: r[1] for r in store.conn.execute("SELECT id, content FROM messages")}
    store.close()
    assert set(acked) <= set(contents)
    assert "hi?" not in contents.values()  # refused, so never stored


def test_reopening_backs_off_from_1_s_doubling_to_30_s() -> None:
    assert list(itertools.islice(delays(), 8)) == [1, 2, 4, 8, 16, 30, 30, 30]


async def test_an_unreachable_memory_refuses_changes_and_stops_retrying_when_closed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("psycopg")
    nobody = f"postgresql://ann@127.0.0.1:{free_port()}/topicforest"  # nothing listens there
    memory = WorkspaceMemory(tmp_path.as_uri(), Settings(store_url=nobody))

    def attempts() -> list[str]:
        return [r.levelname for r in caplog.records if "unreachable" in r.getMessage()]

    with caplog.at_level(logging.DEBUG, logger="topicforest.workspace.memory"):
        memory.start()
        with pytest.raises(StoreError, match=r"unreachable.*trying again in the background"):
            memory.append("t", "user", "hello?")
        await until(lambda: len(attempts()) >= 2)  # the open, then a retry 1 s later
        await asyncio.wait_for(memory.close(), 10)  # an attempt under way ends, none follows
        seen = attempts()
        await asyncio.sleep(2.5)
    assert attempts() == seen
    assert seen[:2] == ["ERROR", "DEBUG"]  # said once loudly, retries quietly
