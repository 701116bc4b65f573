"""pytest-lsp fixtures: the real server process, with or without a chat model behind the stub."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from topicforest.server.jsonrpc import raw_converter
from topicforest.server.protocol import PREFIX
from topicforest.testing.stub_llm import STUB_API_KEY, ThreadedStubLLM

SERVER = [sys.executable, "-m", "topicforest", "serve"]
# Summaries settle after 2 s of quiet instead of a minute, so tests see them soon.
SERVER_ENV = {
    **os.environ,
    "OPENAI_API_KEY": STUB_API_KEY,
    "PYTHONUNBUFFERED": "1",
    "TOPICFOREST_SETTLE_SECONDS": "2",
}
# Waits in tests only bound a hang: generous, so a loaded machine (CI shares its cores) passes.
HANG = 120.0
CAPABILITIES = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(workspace_folders=True, configuration=False),
)


class Client(LanguageClient):
    """pytest-lsp's client with plain-JSON custom results and our notifications recorded."""

    notes: defaultdict[str, list[Any]]
    workspace_uri: str

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.protocol.send_request_async(PREFIX + method, params or {})

    async def rpc_error(self, method: str, params: Any) -> JsonRpcException:
        """The JSON-RPC error a request must fail with."""
        with pytest.raises(JsonRpcException) as info:
            await self.protocol.send_request_async(PREFIX + method, params)
        return info.value

    async def wait_for(self, method: str, predicate: Any = None, timeout: float = HANG) -> Any:
        """The first recorded notification (past or future) matching `predicate`."""

        async def poll() -> Any:
            while True:
                for params in self.notes[method]:
                    if predicate is None or predicate(params):
                        return params
                await asyncio.sleep(0.01)

        return await asyncio.wait_for(poll(), timeout)

    async def until(self, condition: Any, timeout: float = HANG) -> None:
        """Wait until `condition()` holds (for state pytest-lsp records, e.g. messages)."""

        async def poll() -> None:
            while not condition():
                await asyncio.sleep(0.01)

        await asyncio.wait_for(poll(), timeout)


def make_client() -> Client:
    client = Client(converter_factory=raw_converter)
    register_lsp_features(client)
    client.notes = defaultdict(list)
    for method in ("topicsChanged", "chatDelta", "threadsChanged"):

        def record(params: Any, _method: str = PREFIX + method) -> None:
            client.notes[_method].append(params)

        client.feature(PREFIX + method)(record)
    return client


CONFIG = ClientServerConfig(
    server_command=SERVER, client_factory=make_client, server_env=SERVER_ENV
)


async def start(client: Client, folder: Path, settings: dict[str, Any] | None = None) -> None:
    client.workspace_uri = folder.as_uri()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=CAPABILITIES,
            workspace_folders=[types.WorkspaceFolder(uri=client.workspace_uri, name="ws")],
            # storePath: keep any store the server keeps inside the test's own directory
            initialization_options={
                "topicForest": {"storePath": str(folder / ".store"), **(settings or {})}
            },
        )
    )


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: Client, tmp_path: Path) -> AsyncIterator[None]:
    """A server with no chat model (topics and the offline summarizer only)."""
    await start(lsp_client, tmp_path, {"historyBudget": 512})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def shared_client(
    lsp_client: Client, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[None]:
    """One model-less server for a whole module (tests that only read or fail)."""
    await start(lsp_client, tmp_path_factory.mktemp("shared"), {"historyBudget": 512})
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def stub() -> Iterator[ThreadedStubLLM]:
    """The stub on its own thread (pytest-lsp fixtures can only depend on sync fixtures)."""
    with ThreadedStubLLM(chunks=6) as running:
        yield running


@pytest_lsp.fixture(config=CONFIG)
async def chat_client(
    lsp_client: Client, tmp_path: Path, stub: ThreadedStubLLM
) -> AsyncIterator[None]:
    """A server whose chat (and summary) model is the loopback stub."""
    await start(
        lsp_client,
        tmp_path,
        {
            "chatModel": "openai/stub-chat",
            "summaryModels": ["openai/stub-summary"],
            "apiBase": stub.base_url,
            "historyBudget": 512,
        },
    )
    yield
    await lsp_client.shutdown_session()


def sample_turns(limit: int | None = None) -> list[tuple[str, str]]:
    """The bundled sample conversation (several interleaved topics) as (role, text) pairs."""
    data = json.loads(files("topicforest.data").joinpath("sample_conversation.json").read_text())
    return [(m["role"], m["content"]) for m in data["messages"][:limit]]


SAMPLE = sample_turns()
CONVERSATION = [
    ("user", "How do I configure pytest fixtures in conftest.py for the parser tests?"),
    (
        "assistant",
        "Put shared fixtures in tests/conftest.py; pytest discovers them for parse_args.",
    ),
    ("user", "The SQLite database locks when two writers commit; should I enable WAL mode?"),
    ("assistant", "Yes: PRAGMA journal_mode=WAL in store/db.py lets readers run during writes."),
    ("user", "Now the React component UserTable.tsx re-renders on every keystroke. Why?"),
    ("assistant", "useMemo the rows in UserTable.tsx and wrap the handler in useCallback."),
    ("user", "Back to SQLite: the busy_timeout pragma, what value for store/db.py?"),
    ("assistant", "busy_timeout=5000 in store/db.py next to journal_mode=WAL works well."),
    ("user", "Dockerfile question: the python:3.12-slim image build fails on gcc for psycopg."),
    ("assistant", "Install build-essential in the Dockerfile or use psycopg[binary] 3.2.1 wheels."),
]


async def replay(
    client: Client, stub: ThreadedStubLLM, turns: list[tuple[str, str]], thread: str = "t1"
) -> list[dict[str, Any]]:
    """Chat each user turn; the stub answers with the conversation's assistant turns."""
    stub.script(*[text for role, text in turns if role == "assistant"])
    results = []
    for index, (role, text) in enumerate(turns):
        if role == "user":
            params = {"threadId": thread, "turnId": f"{thread}-{index}", "message": text}
            results.append(await client.call("chat", params))
    return results


async def summarized(client: Client) -> list[dict[str, Any]]:
    """listTopics once every topic has a summary (background work finished)."""

    async def settled() -> list[dict[str, Any]]:
        while True:
            topics = (await client.call("listTopics"))["topics"]
            live = [t for t in topics if not t["dropped"]]
            if live and not any(t["pending"] for t in live):
                return topics  # type: ignore[no-any-return]
            await asyncio.sleep(0.05)

    # A guard against a hang, not a speed check: on a loaded 2-core machine the background
    # summaries of the sample took over 20 s.
    return await asyncio.wait_for(settled(), 120)
