"""Two real server processes on one workspace, each driven by its own pytest-lsp client, on
both backends (the `store_url` fixture: the SQLite file, or the folder's team memory in a real
PostgreSQL)."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from topicforest.store import Store, store_path
from topicforest.store.identity import repository_identity
from topicforest.store.postgres_address import memory_key
from topicforest.testing.stub_llm import ThreadedStubLLM

from ..server.conftest import SAMPLE, SERVER, SERVER_ENV, Client, make_client, replay, start

TURNS = 300  # chat turns per window in the concurrency test


@pytest.fixture
def stub() -> Iterator[ThreadedStubLLM]:
    with ThreadedStubLLM(chunks=2) as running:
        yield running


class Windows:
    """Editor windows (server process + client) on one memory: a workspace folder's SQLite
    store, or with `url` (topicForest.storeUrl) the folder's team memory in PostgreSQL."""

    def __init__(self, folder: Path, stub: ThreadedStubLLM, url: str | None = None) -> None:
        self.folder = folder
        self.store_dir = folder.parent / "memory"
        self.stub = stub
        self.url = url
        self.clients: list[Client] = []

    def settings(self, name: str, user: str | None) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "chatModel": "openai/stub-chat",
            "summaryModels": [f"openai/summary-{name}"],
            "apiBase": self.stub.base_url,
            "historyBudget": 512,
            "storePath": str(self.store_dir),
        }
        if self.url is not None:
            settings["storeUrl"] = self.url
        if user is not None:
            settings["user"] = user
        return settings

    async def open(
        self, name: str, *, folder: Path | None = None, user: str | None = None
    ) -> Client:
        config = ClientServerConfig(
            server_command=SERVER, client_factory=make_client, server_env=SERVER_ENV
        )
        client: Client = await config.start()  # type: ignore[assignment]
        await start(client, folder or self.folder, self.settings(name, user))
        self.clients.append(client)
        await worker_ready(client)
        return client

    @property
    def db(self) -> Path:
        """The SQLite file (only with no `url`)."""
        return store_path(self.folder, self.store_dir)

    def store(self, user: str | None = None) -> Store:
        """A Store on the windows' memory, as another process would open it (caller closes)."""
        return Store.for_workspace(self.folder, self.store_dir, url=self.url, user=user)

    def maintainer_pid(self) -> int | None:
        store = self.store()
        try:
            return store.lease.holder_pid()
        finally:
            store.close()

    async def close(self) -> None:
        """Shut down every window still running (a killed one is left alone)."""
        clients, self.clients = self.clients, []
        for client in clients:
            if client._server is not None and client._server.returncode is None:
                await client.shutdown_session()


@pytest.fixture
async def windows(
    tmp_path: Path, stub: ThreadedStubLLM, store_url: str | None
) -> AsyncIterator[Windows]:
    folder = tmp_path / "workspace"
    folder.mkdir()
    opened = Windows(folder, stub, store_url)
    yield opened
    await opened.close()


async def worker_ready(client: Client) -> None:
    """Until the window's litellm worker has imported litellm: summaries wait for it, and
    `settled_topics` sees quiet from the stub's side only."""
    await until(lambda: any("litellm ready" in m.message for m in client.log_messages), 60)


def pid(client: Client) -> int:
    assert client._server is not None
    return client._server.pid


async def until(condition: Any, timeout: float = 20.0, every: float = 0.05) -> Any:
    """Poll `condition` (sync or async) until it returns something truthy."""

    async def poll() -> Any:
        while True:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            await asyncio.sleep(every)

    return await asyncio.wait_for(poll(), timeout)


async def chat_turns(client: Client, thread: str, count: int) -> list[int]:
    """`count` chat turns; returns the ids of every message the server acknowledged."""
    questions = [text for role, text in SAMPLE if role == "user"]
    acked = []
    for i in range(count):
        text = f"{questions[i % len(questions)]} ({thread} #{i})"
        result = await client.call("chat", {"threadId": thread, "turnId": f"{i}", "message": text})
        acked += [result["userMessageId"], result["replyMessageId"]]
    return acked


def summarizing(client: Client) -> bool:
    """Whether a work-done progress the server began (summaries) has not ended."""
    return any(
        not reports or not isinstance(reports[-1], types.WorkDoneProgressEnd)
        for reports in client.progress_reports.values()
    )


def shared(topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Topics as the memory the windows share holds them: without each window's reshape notes
    (what it saw happen: engine/reshaping.py)."""
    return [{k: v for k, v in t.items() if k != "reshapes"} for t in topics]


async def settled_topics(stub: ThreadedStubLLM, *clients: Client) -> list[dict[str, Any]]:
    """The windows' common topic list once background work is quiet and they all agree."""
    seen: list[Any] = []

    async def agree() -> list[dict[str, Any]] | None:
        lists = [shared((await c.call("listTopics"))["topics"]) for c in clients]
        # busy: a summary at the stub, or one the server is still making (its progress is
        # open: the request may be on its way through the litellm worker)
        busy = any(r.finished is None for r in stub.calls("summary")) or any(
            summarizing(c) for c in clients
        )
        stable = bool(seen) and lists == seen[-1]
        seen.append(lists)
        if lists[0] and stable and not busy and all(t == lists[0] for t in lists):
            return lists[0]  # type: ignore[no-any-return]
        return None

    try:
        return await until(agree, timeout=120, every=0.3)  # type: ignore[no-any-return]
    except TimeoutError:
        raise AssertionError(f"the windows disagree: {seen[-1]}") from None


async def test_two_windows_share_one_memory(windows: Windows) -> None:
    a = await windows.open("a")
    await until(lambda: windows.maintainer_pid() == pid(a))
    b = await windows.open("b")
    acked_a, acked_b = await asyncio.gather(
        chat_turns(a, "window-a", TURNS), chat_turns(b, "window-b", TURNS)
    )
    acked = acked_a + acked_b
    assert len(set(acked)) == 4 * TURNS  # no id collides across the processes

    topics = await settled_topics(windows.stub, a, b)
    assert topics
    # Only the maintainer summarized: the other window never paid for a summary.
    summary_models = {r.model for r in windows.stub.calls("summary")}
    assert summary_models == {"summary-a"}, summary_models

    threads_a = (await a.call("listThreads"))["threads"]
    assert {t["threadId"] for t in threads_a} == {"window-a", "window-b"}
    assert threads_a == (await b.call("listThreads"))["threads"]
    history = await b.call("threadHistory", {"threadId": "window-a", "limit": 4})
    assert [m["id"] for m in history["messages"]] == acked_a[-4:]

    await windows.close()
    store = windows.store()
    stored = [r[0] for r in store.conn.execute("SELECT id FROM messages")]
    assert sorted(stored) == sorted(acked)  # every acknowledged message, exactly once
    window = store.open_window()
    members = [m for root in window.topic_ids() for m in window.forest.members(root)]
    hot = [m.id for zone in window.hot.values() for m in zone]  # kept as they were at exit
    store.close()
    assert sorted(members + hot) == sorted(acked)  # each in exactly one topic or hot zone


async def test_a_drop_in_one_window_shows_in_the_other(windows: Windows) -> None:
    a = await windows.open("a")
    b = await windows.open("b")
    await chat_turns(a, "a", 30)
    before = await settled_topics(windows.stub, a, b)
    topic = before[0]["id"]
    await b.call("dropTopic", {"topicId": topic})

    async def dropped_in_a() -> bool:
        listed = (await a.call("listTopics"))["topics"]
        return any(t["id"] == topic and t["dropped"] for t in listed)

    await until(dropped_in_a, timeout=120)
    note = await a.wait_for(
        "topicForest/topicsChanged", lambda p: p["reason"] == "external", timeout=120
    )
    assert note["workspaceUri"] == a.workspace_uri


async def test_a_message_in_one_window_names_its_thread_in_the_other(windows: Windows) -> None:
    """One transcript everywhere (issue 28): threadsChanged names the threads another window
    added messages to, so a client showing one reloads it; another person's stay private."""
    a = await windows.open("a", user="ann")
    b = await windows.open("b", user="ann")
    bob = await windows.open("bob", user="bob")
    await chat_turns(bob, "bob-1", 1)  # committed before b's turn: a loads it first, or with it
    await chat_turns(b, "shared", 1)

    def appended(n: dict[str, Any]) -> list[str]:
        return list(n.get("appended", []))

    note = await a.wait_for(
        "topicForest/threadsChanged", lambda n: "shared" in appended(n), timeout=60
    )
    assert note["threadId"] is None
    assert not any("bob-1" in appended(n) for n in a.notes["topicForest/threadsChanged"])
    assert not any(appended(n) for n in b.notes["topicForest/threadsChanged"])  # its own turn
    history = await a.call("threadHistory", {"threadId": "shared"})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]


async def test_kill_9_of_the_maintainer_mid_summary_and_mid_chat(windows: Windows) -> None:
    a = await windows.open("a")
    await until(lambda: windows.maintainer_pid() == pid(a))
    b = await windows.open("b")
    acked = await chat_turns(b, "b", 20)
    acked += await chat_turns(a, "a", 20)
    windows.stub.config.kind_latency["summary"] = 30.0  # a's summaries hang...
    windows.stub.config.chunk_latency = 0.5  # ...and so does its next chat turn
    acked += await chat_turns(b, "b2", 10)  # makes topics dirty for a to summarize
    await until(lambda: any(r.finished is None for r in windows.stub.calls("summary")))
    turn = asyncio.ensure_future(
        a.call("chat", {"threadId": "a", "turnId": "last", "message": "Is pg_isready enough?"})
    )
    await a.wait_for("topicForest/chatDelta", lambda p: p["turnId"] == "last", timeout=120)
    os.kill(pid(a), signal.SIGKILL)  # mid-summary and mid-chat-turn
    with pytest.raises(Exception):  # noqa: B017 - the connection just dies
        await asyncio.wait_for(turn, 3)
    windows.stub.config.kind_latency.clear()
    windows.stub.config.chunk_latency = 0.0

    await until(lambda: windows.maintainer_pid() == pid(b), timeout=120)

    def resumed() -> bool:
        return any(r.model == "summary-b" and r.ok for r in windows.stub.calls("summary"))

    await until(resumed, timeout=120)  # b redoes the summaries a died making
    store = windows.store()
    assert store.integrity_ok()
    stored = {r[0] for r in store.conn.execute("SELECT id FROM messages")}
    assert set(acked) <= stored
    # The killed turn's user message was stored before the model was called.
    contents = [r[0] for r in store.conn.execute("SELECT content FROM messages")]
    store.close()
    assert "Is pg_isready enough?" in contents


async def test_restart_restores_the_same_topics(windows: Windows) -> None:
    """The tree a window showed before it closed is the tree the next window shows: same ids,
    titles, members, summaries, pins and drops, and no summary made again. (A clean exit used
    to flush the window's thread into the forest: new topics and new titles, no new message.)"""

    async def snapshot(client: Client) -> tuple[Any, ...]:
        async def summarized() -> list[dict[str, Any]] | None:  # settled, and nothing left due
            topics = await settled_topics(windows.stub, client)
            due = any(t["pending"] and not t["dropped"] for t in topics)
            return None if due else topics

        topics = await until(summarized, timeout=60, every=0.3)
        previews = [await client.call("previewTopic", {"topicId": t["id"]}) for t in topics]
        for preview in previews:  # what the window saw reshaped is not stored (reshaping.py)
            preview["topic"].pop("reshapes")
        threads = await client.call("listThreads")
        return topics, previews, threads, len(windows.stub.calls("summary"))

    a = await windows.open("a")
    await replay(a, windows.stub, SAMPLE)
    ids = [t["id"] for t in await settled_topics(windows.stub, a)]
    assert len(ids) > 2
    await a.call("dropTopic", {"topicId": ids[0]})
    await a.call("pinTopic", {"topicId": ids[1]})
    before = await snapshot(a)
    assert before[0][0]["dropped"] and before[0][1]["pinned"]
    await windows.close()

    for name in ("b", "c"):
        client = await windows.open(name)
        after = await snapshot(client)
        assert [(t["id"], t["title"]) for t in after[0]] == [
            (t["id"], t["title"]) for t in before[0]
        ]
        assert after == before  # same members, summaries, pins, drops; no new summary calls
        await windows.close()


def foreign_memory(windows: Windows) -> tuple[str, Callable[[], object]]:
    """Put something that is not a Topic Forest memory where the windows' memory belongs (a
    file that is not SQLite; a schema of the memory's name holding someone else's table);
    returns what the error must say and how to read the thing back (it must not change)."""
    if windows.url is None:
        windows.db.parent.mkdir(parents=True)
        windows.db.write_bytes(b"garbage, not SQLite\n" * 100)
        return "not a Topic Forest memory database", windows.db.read_bytes
    import psycopg

    url = windows.url
    schema = "topicforest_" + memory_key(repository_identity(windows.folder))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.notes (text TEXT)")
        conn.execute(f"INSERT INTO {schema}.notes VALUES ('not ours')")

    def contents() -> object:
        with psycopg.connect(url, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            ).fetchall()
            return tables, conn.execute(f"SELECT text FROM {schema}.notes").fetchall()

    return "is not a Topic Forest memory", contents


async def test_a_corrupt_store_is_a_clear_error_not_a_crash(windows: Windows) -> None:
    says, contents = foreign_memory(windows)
    before = contents()
    a = await windows.open("a")
    error = await a.rpc_error(
        "chat", {"threadId": "t", "turnId": "1", "message": "hello", "workspaceUri": None}
    )
    assert error.code == -32005 and says in str(error)
    assert (await a.call("listTopics"))["topics"] == []  # still serving
    assert contents() == before  # never touched


async def test_a_thread_deleted_in_one_window_is_gone_in_the_other(windows: Windows) -> None:
    a = await windows.open("a")
    b = await windows.open("b")
    await chat_turns(a, "keep", 15)
    await chat_turns(b, "zebrafish", 15)  # the thread's name is in each of its questions
    await settled_topics(windows.stub, a, b)

    deleted = await b.call("deleteThread", {"threadId": "zebrafish"})

    assert deleted == {"threadId": "zebrafish", "deletedMessages": 30}
    await a.wait_for("topicForest/threadsChanged", lambda p: p["threadId"] is None, timeout=120)
    assert [t["threadId"] for t in (await a.call("listThreads"))["threads"]] == ["keep"]
    topics = await settled_topics(windows.stub, a, b)  # both windows agree again
    for topic in topics:
        assert "zebrafish" not in f"{topic['title']} {topic['summary']} {topic['files']}"
        preview = await a.call("previewTopic", {"topicId": topic["id"]})
        assert {m["threadId"] for m in preview["messages"]} == {"keep"}
    rendered = await a.call("renderContext", {"query": "zebrafish", "threadId": "keep"})
    assert "zebrafish" not in "\n".join(m["content"] for m in rendered["messages"])


async def test_a_chat_turn_into_another_persons_thread_is_refused(windows: Windows) -> None:
    ann = windows.store(user="ann")
    question = ann.open_window().append("ann-1", "user", "Where is create_invoice?")
    ann.close()
    bob = await windows.open("b", user="bob")
    for turn in ({"message": "Mine now?"}, {"message": "Again?", "retryOf": question.id}):
        error = await bob.rpc_error("chat", {"threadId": "ann-1", "turnId": "t", **turn})
        assert error.code == -32602 and error.data == {"field": "threadId"}
        assert "'ann-1' belongs to another person" in str(error)
    assert windows.stub.calls("chat") == []  # refused before anything was sent
    await chat_turns(bob, "bob-1", 1)  # his own thread works
    store = windows.store(user="ann")
    history = [m.content for m in store.thread_history("ann-1")]
    store.close()
    assert history == ["Where is create_invoice?"]
