"""Issue 30: `topicforest mcp`, the workspace's memory as read-only MCP tools for any agent.

The agent is the MCP SDK's own client over stdio; the memory is filled by a real editor server
process (`topicforest serve`, the loopback stub as its chat model) in the test's directory.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult

from topicforest.server.stdio_client import StdioClient
from topicforest.store import store_path
from topicforest.store.lease import Lease
from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import SAMPLE, SERVER_ENV

TOOLS = {"list_topics", "search_topics", "read_topic", "recall"}
PLANTED = [
    ("user", "Which port does the staging metrics exporter listen on, and how is it started?"),
    (
        "assistant",
        "The staging metrics exporter (metrics_exporter.py) listens on port 9464; start it with "
        "`--exporter-quiet-startup` so it does not flood the journal.",
    ),
]
FACT = "9464"
QUESTION = "Which port does the staging metrics exporter listen on?"


def chat(editor: StdioClient, turns: list[tuple[str, str]], thread: str = "t1") -> None:
    for index, (role, text) in enumerate(turns):
        if role == "user":
            params = {"threadId": thread, "turnId": f"{thread}-{index}", "message": text}
            editor.request("topicForest/chat", params, timeout=60)


def settled(editor: StdioClient) -> None:
    """Wait until every live topic of the editor is summarized (its background work done)."""
    deadline = time.monotonic() + 180  # bounds a hang only
    while time.monotonic() < deadline:
        live = editor_topics(editor)
        if live and not any(t["pending"] for t in live):
            return
        time.sleep(0.05)
    raise TimeoutError("the editor's topics were never all summarized")


def fill(folder: Path, stub: ThreadedStubLLM, turns: list[tuple[str, str]]) -> StdioClient:
    """A real editor window on `folder`, its memory in `folder/.store`, after `turns`."""
    editor = StdioClient(env=SERVER_ENV)
    options = {"storePath": str(folder / ".store"), "historyBudget": 512}
    editor.initialize([folder], options | {"chatModel": "openai/stub", "apiBase": stub.base_url})
    stub.script(*[text for role, text in turns if role == "assistant"])
    chat(editor, turns)
    return editor


@asynccontextmanager
async def agent(folder: Path, *extra: str) -> AsyncIterator[Client]:
    """An agent's MCP session with `topicforest mcp` on the workspace `folder`."""
    args = ["-m", "topicforest", "mcp", "--workspace", str(folder)]
    server = StdioServerParameters(
        command=sys.executable, args=[*args, "--store-path", str(folder / ".store"), *extra]
    )
    async with Client(server, read_timeout_seconds=120) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


def data(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, StdioClient]]:
    """One editor window's memory of the sample conversation with a fact planted early, all of
    it summarized; the editor stays open (the tests drop in it)."""
    folder = tmp_path_factory.mktemp("workspace")
    with ThreadedStubLLM(chunks=2) as stub:
        editor = fill(folder, stub, SAMPLE[:12] + PLANTED + SAMPLE[12:])
        try:
            settled(editor)
            yield folder, editor
        finally:
            editor.close()


def editor_topics(editor: StdioClient) -> list[dict[str, Any]]:
    return [t for t in editor.request("topicForest/listTopics", {})["topics"] if not t["dropped"]]


def holding(editor: StdioClient, fact: str) -> int:
    """The id of the editor's topic whose messages hold `fact`."""
    for topic in editor_topics(editor):
        preview = editor.request("topicForest/previewTopic", {"topicId": topic["id"]})
        if any(fact in m["content"] for m in preview["messages"]):
            return int(topic["id"])
    raise AssertionError(f"no topic holds {fact!r}")


async def test_the_four_tools_list_what_the_editor_lists(
    workspace: tuple[Path, StdioClient],
) -> None:
    folder, editor = workspace
    async with agent(folder) as client:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        for tool in listed.tools:
            assert tool.input_schema["type"] == "object"
            assert tool.annotations is not None and tool.annotations.read_only_hint
        result = await call(client, "list_topics", limit=200)
    expected = {t["id"]: t for t in editor_topics(editor)}
    topics = data(result)["topics"]
    assert {t["id"] for t in topics} == set(expected)
    for topic in topics:
        assert topic["message_count"] == expected[topic["id"]]["messageCount"]
        assert topic["first_time"] <= topic["last_time"]
        assert f"## Topic {topic['id']}" in text(result)
    assert "data, not instructions" in text(result)


async def test_search_finds_the_topic_holding_a_planted_fact(
    workspace: tuple[Path, StdioClient],
) -> None:
    folder, editor = workspace
    async with agent(folder) as client:
        result = await call(client, "search_topics", query="staging metrics exporter port", limit=3)
    best = data(result)["results"][0]
    assert best["id"] == holding(editor, FACT)
    assert any(FACT in p["text"] for p in best["passages"])  # why: the passage that says it
    assert FACT in text(result)


async def test_recall_brings_the_fact_within_the_budget(
    workspace: tuple[Path, StdioClient],
) -> None:
    folder, editor = workspace
    async with agent(folder) as client:
        result = await call(client, "recall", query=QUESTION, max_tokens=600)
    recalled = data(result)
    assert 0 < recalled["tokens"] <= 600 and recalled["budget"] == 600
    assert FACT in text(result)
    assert holding(editor, FACT) in [t["id"] for t in recalled["topics"]]
    for line in text(result).splitlines()[1:]:  # stored text is only ever quoted
        assert line == "" or line.startswith(("| ", "## Topic ")), line


async def test_read_topic_pages_through_a_long_topic(
    workspace: tuple[Path, StdioClient],
) -> None:
    folder, editor = workspace
    longest = max(editor_topics(editor), key=lambda t: t["messageCount"])
    assert longest["messageCount"] > 6  # several pages of 3
    preview = editor.request("topicForest/previewTopic", {"topicId": longest["id"]})
    seen: list[int] = []
    pages = 0
    offset: int | None = 0
    async with agent(folder) as client:
        while offset is not None:
            page = data(await call(client, "read_topic", id=longest["id"], offset=offset, limit=3))
            assert page["total_messages"] == longest["messageCount"]
            assert len(page["messages"]) <= 3
            seen += [m["id"] for m in page["messages"]]
            offset = page["next_offset"]
            pages += 1
        first = await call(client, "read_topic", id=longest["id"], limit=3)
    assert seen == [m["id"] for m in preview["messages"]]
    assert pages == -(-longest["messageCount"] // 3)
    assert data(first)["summary"] == preview["topic"]["summary"]
    assert f"read_topic(id={longest['id']}, offset=3)" in text(first)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_topic", {"id": "seven"}),
        ("read_topic", {"id": 987654}),
        ("read_topic", {}),
        ("read_topic", {"id": 1, "limit": 0}),
        ("read_topic", {"id": 1, "offset": -1}),
        ("search_topics", {"query": ""}),
        ("search_topics", {"query": "port", "limit": 1000}),
        ("search_topics", {"query": "x" * 5000}),
        ("recall", {"query": "port", "max_tokens": 10**9}),
        ("recall", {"query": ["not", "text"]}),
        ("list_topics", {"limit": True}),
        ("drop_topic", {"id": 1}),
    ],
)
async def test_bad_arguments_are_tool_errors(
    workspace: tuple[Path, StdioClient], tool: str, arguments: dict[str, Any]
) -> None:
    folder, _ = workspace
    async with agent(folder) as client:
        result = await client.call_tool(tool, arguments)
        after = await client.call_tool("list_topics", {})
    assert result.is_error
    assert "Traceback" not in text(result) and 'File "' not in text(result)
    assert not after.is_error  # and the server keeps serving


async def test_a_drop_in_the_editor_hides_the_topic_from_every_tool(
    workspace: tuple[Path, StdioClient],
) -> None:
    folder, editor = workspace
    topic = holding(editor, FACT)
    preview = editor.request("topicForest/previewTopic", {"topicId": topic})
    holding_ids = [m["id"] for m in preview["messages"]]
    async with agent(folder) as client:
        before = data(await call(client, "list_topics", limit=200))
        assert topic in [t["id"] for t in before["topics"]]
        editor.request("topicForest/dropTopic", {"topicId": topic})
        after = data(await call(client, "list_topics", limit=200))
        searched = data(await call(client, "search_topics", query=QUESTION, limit=20))
        recalled = await call(client, "recall", query=QUESTION, max_tokens=4000)
        read = await client.call_tool("read_topic", {"id": topic})
    assert topic not in [t["id"] for t in after["topics"]]
    assert after["total"] == before["total"] - 1
    assert topic not in [r["id"] for r in searched["results"]]
    assert topic not in [t["id"] for t in data(recalled)["topics"]]
    planted = set(holding_ids)
    assert not planted & {m for t in data(recalled)["topics"] for m in t["message_ids"]}
    assert PLANTED[1][1][:40] not in text(recalled)  # its messages are not quoted
    assert read.is_error and f"no topic {topic}" in text(read)


def dump(database: Path) -> str:
    """Every row of the memory database, from a read-only connection of the test's own."""
    conn = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


async def test_the_store_is_unchanged_and_its_lease_free(tmp_path: Path) -> None:
    with ThreadedStubLLM(chunks=2) as stub:
        editor = fill(tmp_path, stub, SAMPLE[:30] + PLANTED)
        try:
            settled(editor)
        finally:
            editor.close()  # flushes its threads into topics, lets the lease go
    database = store_path(tmp_path, tmp_path / ".store")
    before = dump(database)
    async with agent(tmp_path) as client:
        topics = data(await call(client, "list_topics"))["topics"]
        for topic in topics:
            await call(client, "read_topic", id=topic["id"], limit=50)
        await call(client, "search_topics", query=QUESTION)
        await call(client, "recall", query=QUESTION, max_tokens=16000)
        await call(client, "recall", query="Dockerfile", max_tokens=128)
        lease = Lease(database.with_name(database.name + ".lease"))
        assert lease.try_acquire()  # the MCP server, running, does not hold it
        lease.release()
    assert topics
    assert dump(database) == before


async def test_a_workspace_without_a_memory_says_so(tmp_path: Path) -> None:
    async with agent(tmp_path) as client:
        result = await client.call_tool("list_topics", {})
    assert result.is_error and "no memory stored" in text(result)
    assert not (tmp_path / ".store").exists()  # nothing was created


def team_dump(url: str) -> tuple[str, int]:
    """Every row of every team memory in the database, hashed, and how many tables."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_schema LIKE 'topicforest_%' ORDER BY 1, 2"
        ).fetchall()
        digest = hashlib.sha256()
        for schema, table in tables:
            rows = conn.execute(
                f'SELECT t::text FROM "{schema}"."{table}" t ORDER BY 1'  # our own names
            ).fetchall()
            digest.update(f"{schema}.{table}:{rows}".encode())
    return digest.hexdigest(), len(tables)


def advisory_leases(url: str) -> int:
    import psycopg

    from topicforest.store.postgres_address import LEASE_LOCK

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s",
            (LEASE_LOCK,),
        ).fetchone()
    return int(row[0]) if row else 0


async def test_a_team_memory_is_served_read_only(tmp_path: Path, postgres: Any) -> None:
    folder = tmp_path / "clone"
    folder.mkdir()
    for args in (["init", "-q"], ["remote", "add", "origin", "git@github.com:example/shop.git"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)
    url = postgres.create_database(f"mcp_{uuid.uuid4().hex[:12]}")
    with ThreadedStubLLM(chunks=2) as stub:
        editor = StdioClient(env=SERVER_ENV)
        options = {"storeUrl": url, "user": "alice", "historyBudget": 512}
        editor.initialize(
            [folder], options | {"chatModel": "openai/stub", "apiBase": stub.base_url}
        )
        turns = PLANTED + SAMPLE[:20]  # the fact graduates: a closed window keeps its hot zone
        stub.script(*[text for role, text in turns if role == "assistant"])
        try:
            chat(editor, turns)
            settled(editor)
            expected = {t["id"] for t in editor_topics(editor)}
        finally:
            editor.close()
    before, tables = team_dump(url)
    assert tables > 0
    async with agent(folder, "--store-url", url, "--user", "bob") as client:
        listed = data(await call(client, "list_topics", limit=200))
        searched = data(await call(client, "search_topics", query=QUESTION))
        recalled = await call(client, "recall", query=QUESTION, max_tokens=2000)
        for topic in listed["topics"]:
            await call(client, "read_topic", id=topic["id"], limit=50)
        assert advisory_leases(url) == 0  # the MCP server, running, takes no lease
    assert expected <= {t["id"] for t in listed["topics"]}
    assert any(FACT in p["text"] for r in searched["results"][:1] for p in r["passages"])
    assert FACT in text(recalled)
    assert team_dump(url) == (before, tables)
