"""Early answers (server/early.py): before pygls is loaded, the same answers pygls gives.

Each end-to-end test runs real server processes on a stored workspace, once with early answers
(the default) and once with TOPICFOREST_EARLY=0 (pygls answers everything), and compares.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig

from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.server import app, early, identity
from topicforest.server.framing import Frame, FrameParser, Skipped
from topicforest.server.server import TopicForestServer
from topicforest.server.stdio import PipeReader
from topicforest.store import Store
from topicforest.workspace.settings import Settings, window_config

from .conftest import CAPABILITIES, SAMPLE, SERVER, SERVER_ENV, Client, make_client

ANSWERED = re.compile(r"answered (\d+) request\(s\) while the language server loaded")
# mergeThreshold 7 is invalid: shown to the user once; an unknown key is logged once
SETTINGS = {"historyBudget": 512, "mergeThreshold": 7, "unknownKey": 1}


async def stored_workspace(folder: Path) -> list[Path]:
    """A workspace memory with a copy (one store for each run), settled for the servers'
    settings: no graduation or summary left that could change it while it is compared."""
    store = Store.for_workspace(folder, folder / "early")
    window = store.open_window(window_config(Settings(history_budget=SETTINGS["historyBudget"])))
    last = f"t{(len(SAMPLE) - 1) // 20}"
    with store.transaction():
        for index, (role, text) in enumerate(SAMPLE):
            window.append(f"t{index // 20}", role, text)
            window.graduate()
        for thread in list(window.hot):
            if thread != last:  # the last thread keeps a hot zone
                window.flush_thread(thread)
    await resolve_all(window, ExtractiveSummarizer())
    store.close()
    shutil.copytree(folder / "early", folder / "pygls")  # same file name: keyed by the folder
    return [folder / "early", folder / "pygls"]


async def open_session(folder: Path, store: Path) -> tuple[Client, Any]:
    """A server on `folder`; early answers unless `store` is the "pygls" copy."""
    env = {**SERVER_ENV, early.EARLY_ENV: "1" if store.name == "early" else "0"}
    client = await ClientServerConfig(SERVER, make_client, env).start()
    assert isinstance(client, Client)
    client.workspace_uri = folder.as_uri()
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=CAPABILITIES,
            workspace_folders=[types.WorkspaceFolder(uri=client.workspace_uri, name="ws")],
            initialization_options={"topicForest": {"storePath": str(store), **SETTINGS}},
        )
    )
    return client, result


async def read_everything(client: Client) -> list[Any]:
    """Every read-only method, sent at once after `initialize` (as a new window does)."""
    client.protocol.notify(early.PREFIX + "activeFileChanged", {"uri": "file:///x/store/db.py"})
    topics = await client.call("listTopics")
    first = topics["topics"][0]["id"]
    return [
        topics,
        await client.call("listThreads"),
        await client.call("threadHistory", {"threadId": "t1", "limit": 5}),
        await client.call("previewTopic", {"topicId": first}),
        await client.call("searchTopics", {"query": "sqlite WAL busy_timeout"}),
        await client.call("renderContext", {"query": "pytest fixtures in conftest.py"}),
    ]


def answered_early(client: Client) -> int:
    found = [ANSWERED.search(m.message) for m in client.log_messages]
    assert not [m for m in client.log_messages if m.type == types.MessageType.Error]
    return max((int(m.group(1)) for m in found if m), default=0)


async def close(client: Client) -> None:
    await client.shutdown_session()
    await client.stop()


async def test_early_answers_equal_pygls_answers(tmp_path: Path) -> None:
    runs = []
    for store in await stored_workspace(tmp_path):
        client, init = await open_session(tmp_path, store)
        try:
            answers = await read_everything(client)
            await client.until(lambda c=client: bool(c.messages))  # the settings error
            await asyncio.sleep(0.3)  # shown twice would show by now
            shown = [m.message for m in client.messages]
            # after the hand-over pygls serves everything, state and notifications included
            topic = answers[0]["topics"][0]["id"]
            dropped = await client.call("dropTopic", {"topicId": topic})
            await client.wait_for(
                early.PREFIX + "topicsChanged", lambda p, t=topic: p.get("topicIds") == [t]
            )
            warned = [m.message for m in client.log_messages if "unknownKey" in m.message]
            assert len(warned) == 1, warned
            runs.append((init, answers, shown, dropped, answered_early(client)))
        finally:
            await close(client)
    (init, answers, shown, dropped, count), (init0, answers0, shown0, dropped0, count0) = runs
    assert count >= 2 and count0 == 0  # initialize and at least the first listTopics came early
    assert init == init0
    assert answers == answers0
    assert answers[0]["topics"] and answers[3]["messages"] and answers[5]["messages"]
    assert shown == shown0 and len(shown) == 1 and "mergeThreshold" in shown[0]
    assert dropped == dropped0 and dropped["topic"]["dropped"]


async def test_what_early_cannot_answer_waits_for_pygls_and_keeps_its_order(
    tmp_path: Path,
) -> None:
    runs = []
    for store in await stored_workspace(tmp_path):
        client, _ = await open_session(tmp_path, store)
        try:
            topic = (await client.call("listTopics"))["topics"][0]["id"]
            sent = [
                client.protocol.send_request_async(early.PREFIX + method, params)
                for method, params in (
                    ("listTopics", {"topicId": "not a field"}),  # unknown keys are ignored
                    ("previewTopic", {"topicId": "3"}),  # InvalidParams: pygls answers it
                    ("dropTopic", {"topicId": topic}),  # a change: pygls' to make
                    ("listTopics", {}),  # must see the drop
                    ("previewTopic", {"topicId": 10**6}),  # unknown topic
                )
            ]
            outcomes = await asyncio.gather(*sent, return_exceptions=True)
            runs.append([o if isinstance(o, dict) else (o.code, o.message) for o in outcomes])
        finally:
            await close(client)
    assert runs[0] == runs[1]
    errors = [o for o in runs[0] if isinstance(o, tuple)]
    assert [code for code, _ in errors] == [-32602, -32001]
    after = runs[0][3]
    assert any(t["id"] == topic and t["dropped"] for t in after["topics"])


CLIENTS: list[dict[str, Any]] = [
    {},
    get_converter().unstructure(CAPABILITIES),  # the test client's
    {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
    {"general": {"positionEncodings": ["utf-32"]}},
    {"general": {"positionEncodings": ["bogus"]}},
    {"general": {"positionEncodings": None}, "textDocument": None},
    {"textDocument": {"synchronization": {"willSave": True, "willSaveWaitUntil": False}}},
    {"textDocument": {"synchronization": {"willSave": None, "dynamicRegistration": True}}},
    {"notebookDocument": {"synchronization": {"dynamicRegistration": True}}},
    {  # roughly what vscode-languageclient 9 sends, where it matters here
        "general": {
            "positionEncodings": ["utf-16"],
            "staleRequestSupport": {"cancel": True, "retryOnContentModified": []},
        },
        "textDocument": {
            "synchronization": {
                "dynamicRegistration": True,
                "willSave": True,
                "willSaveWaitUntil": True,
                "didSave": True,
            }
        },
        "workspace": {
            "workspaceFolders": True,
            "configuration": True,
            "fileOperations": {
                "dynamicRegistration": True,
                "didCreate": True,
                "willCreate": True,
                "didRename": True,
                "willRename": True,
                "didDelete": True,
                "willDelete": True,
            },
        },
        "window": {"workDoneProgress": True, "showDocument": {"support": True}},
        "notebookDocument": {"synchronization": {"executionSummarySupport": True}},
    },
]


@pytest.mark.parametrize("client_capabilities", CLIENTS)
def test_initialize_answer_equals_pygls(client_capabilities: dict[str, Any]) -> None:
    server = TopicForestServer()
    for feature in app.FEATURES:
        feature.setup(server)
    written = io.BytesIO()
    server.protocol.set_writer(written)  # type: ignore[arg-type]
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"processId": None, "capabilities": client_capabilities},
    }
    message = json.loads(json.dumps(request), object_hook=server.protocol.structure_message)
    server.protocol.handle_message(message)
    pygls_answer = json.loads(written.getvalue().partition(b"\r\n\r\n")[2])["result"]
    assert pygls_answer["capabilities"] == early.capabilities(client_capabilities)
    assert pygls_answer["serverInfo"] == {
        "name": identity.SERVER_NAME,
        "version": identity.server_version(),
    }


def test_frames_are_read_as_pygls_reads_them_and_odd_input_is_skipped() -> None:
    body = b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'
    framed = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    parser = FrameParser(framed + b"Content-Len")
    assert parser.next() == Frame(body, framed)
    assert parser.next() is None and parser.pending() == b"Content-Len"
    parser = FrameParser(framed[:-1])
    assert parser.next() is None  # body incomplete
    typed = b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n" % len(body)
    assert FrameParser(typed + body).next() == Frame(body, typed + body)
    assert FrameParser(b"content-length: 3\n\nabc").next() == Frame(
        b"abc", b"content-length: 3\n\nabc"
    )
    for odd in (b"X-Other: 1\r\n\r\n", b"x" * 9000, b"Content-Length: -1\r\n\r\n{}", body):
        parser = FrameParser(odd + framed)
        items = list(iter(parser.next, None))
        assert isinstance(items[0], Skipped) and items[-1] == Frame(body, framed), odd


async def test_pygls_reads_the_replay_then_the_stream() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"ngth: 1\r\n\r\nx")
    os.close(write_end)
    with open(read_end, "rb", buffering=0) as stdin:
        stream = PipeReader(stdin, b"Content-Length: 2\r\n\r\n{}Content-Le")
        assert await stream.readline() == b"Content-Length: 2\r\n"
        assert await stream.readline() == b"\r\n"
        assert await stream.readexactly(2) == b"{}"
        assert await stream.readline() == b"Content-Length: 1\r\n"
        assert await stream.readline() == b"\r\n"
        assert await stream.readexactly(1) == b"x"
        assert await stream.readline() == b""


def test_only_the_reply_to_the_replayed_initialize_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = early.frame({"jsonrpc": "2.0", "method": "window/logMessage", "params": {}})
    reply = early.frame({"id": early.REPLAY_ID, "jsonrpc": "2.0", "result": {}})
    later = early.frame({"id": 7, "jsonrpc": "2.0", "result": {}})
    out = io.BytesIO()
    writer = early.DropReply(out, early.REPLAY_ID, {})
    for data in (log, reply, later, reply):
        writer.write(data)
    assert out.getvalue() == log + later + reply  # dropped once, the first time only
    out = io.BytesIO()
    writer = early.DropReply(out, early.REPLAY_ID)
    for data in (later, reply):  # pygls could not read the replay: nothing is dropped
        writer.write(data)
    assert out.getvalue() == later + reply
    assert "refused the client's initialize" in caplog.text
    caplog.clear()
    writer = early.DropReply(io.BytesIO(), early.REPLAY_ID, {"capabilities": {}})
    writer.write(reply)  # a reply that differs from the early answer is reported
    assert "initialize answered early" in caplog.text


class FrontRun:
    """A Front serving in a thread: frames written to its stdin pipe, answers read from its
    stdout; pygls counts as loaded once `loaded` is set."""

    def __init__(self) -> None:
        read, self.stdin = os.pipe()
        self.out = io.BytesIO()
        self.loaded = threading.Event()
        self.front = early.Front(os.fdopen(read, "rb"), self.out, load=self.loaded.wait)
        self.thread = threading.Thread(target=self.front.serve)
        self.thread.start()
        self.sent: list[bytes] = []

    def send(self, *payloads: dict[str, Any]) -> None:
        """Frames written at once (so read at once)."""
        frames = [early.frame(payload) for payload in payloads]
        self.sent.extend(frames)
        os.write(self.stdin, b"".join(frames))

    def answer(self, msg_id: int) -> Any:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for chunk in self.out.getvalue().split(b"Content-Length: ")[1:]:
                message = json.loads(chunk.partition(b"\r\n\r\n")[2])
                if message.get("id") == msg_id:
                    return message["result"]
            time.sleep(0.01)
        raise TimeoutError(msg_id)

    def hand_over(self) -> None:
        self.loaded.set()
        self.thread.join(10)
        os.close(self.stdin)
        self.front.take_logs()


async def test_front_answers_from_the_store_until_pygls_is_loaded(tmp_path: Path) -> None:
    [store_dir, _] = await stored_workspace(tmp_path)
    run = FrontRun()
    try:
        initialize = {
            "processId": None,
            "capabilities": {},
            "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "ws"}],
            "initializationOptions": {"topicForest": {"storePath": str(store_dir)}},
        }
        run.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        assert run.answer(1)["capabilities"] == early.capabilities({})
        run.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        list_topics = {"jsonrpc": "2.0", "method": early.PREFIX + "listTopics", "params": {}}
        run.send({**list_topics, "id": 2})
        topic = run.answer(2)["topics"][0]["id"]
        other = Store.for_workspace(tmp_path, store_dir)  # another window drops a topic
        other.open_window().drop(topic)
        other.close()
        run.send({**list_topics, "id": 3})
        assert any(t["id"] == topic and t["dropped"] for t in run.answer(3)["topics"])
        run.send(  # an unknown workspace is pygls' to refuse, and so is what follows it
            {**list_topics, "id": 4, "params": {"workspaceUri": "file:///elsewhere"}},
            {**list_topics, "id": 5},
        )
        deadline = time.monotonic() + 120
        while run.front.buffer != run.sent[-2] + run.sent[-1] and time.monotonic() < deadline:
            time.sleep(0.01)  # both read: the first is not answered, so neither is the second
        assert run.front.answered == 3
    finally:
        run.hand_over()
    front = run.front
    assert not run.thread.is_alive()
    assert front.buffer == run.sent[-2] + run.sent[-1]  # read, not answered: pygls reads them
    replayed = front.unread()
    initialize_again = json.loads(replayed.split(b"\r\n\r\n")[1].split(b"Content-Length")[0])
    assert initialize_again["id"] == early.REPLAY_ID and initialize_again["params"] == initialize
    assert replayed.endswith(run.sent[1] + run.sent[-2] + run.sent[-1])
    assert front.workspaces is not None
    await front.workspaces.close()


@pytest.mark.parametrize(
    "body",
    [b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": []}}'],
)
def test_what_the_front_cannot_read_is_left_to_pygls(body: bytes) -> None:
    run = FrontRun()
    data = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    os.write(run.stdin, data)
    run.thread.join(120)  # returns at once: nothing answered, nothing loading
    run.hand_over()
    assert run.front.answered == 0 and run.front.workspaces is None
    assert run.front.unread() == data
    assert run.front.writer(run.out) is run.out  # no replay: nothing of pygls' is dropped


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": ["initialize"], "params": {}}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "topicForest/listTopics", "params": {}}', -32002),
    ],
)
def test_what_cannot_be_served_is_refused_by_the_front_itself(body: bytes, code: int) -> None:
    run = FrontRun()
    os.write(run.stdin, b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    deadline = time.monotonic() + 120
    while not run.front.answered and time.monotonic() < deadline:
        time.sleep(0.01)
    os.close(run.stdin)  # the input ends: the front stops (nothing is loading)
    run.thread.join(120)
    run.front.take_logs()
    assert run.front.answered == 1 and run.front.workspaces is None
    reply = json.loads(run.out.getvalue().partition(b"\r\n\r\n")[2])
    assert reply["error"]["code"] == code
    assert run.front.unread() == b""
