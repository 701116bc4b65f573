"""Issue 11: nothing acknowledged is lost and no input makes the server deaf (real processes).

Each test drives `topicforest serve` over stdio, with the loopback stub as the chat model where
one is needed and a real SQLite store in the test's directory.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from topicforest.server.stdio_client import RpcError, StdioClient
from topicforest.store import store_path
from topicforest.testing.stub_llm import ThreadedStubLLM, split_chunks

from .conftest import HANG, SERVER_ENV


@pytest.fixture
def stub() -> Iterator[ThreadedStubLLM]:
    with ThreadedStubLLM(chunks=4) as running:
        yield running


def serve(folder: Path, stub: ThreadedStubLLM | None = None, **settings: Any) -> StdioClient:
    client = StdioClient(env=SERVER_ENV)
    options: dict[str, Any] = {"storePath": str(folder / ".store"), "historyBudget": 512}
    if stub is not None:
        options |= {"chatModel": "openai/stub", "apiBase": stub.base_url}
    client.initialize([folder], options | settings)
    return client


def frame(payload: Any) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def chat(client: StdioClient, thread: str, turn: str, text: str) -> Any:
    params = {"threadId": thread, "turnId": turn, "message": text}
    return client.request("topicForest/chat", params, timeout=HANG)


def history(client: StdioClient, thread: str) -> list[dict[str, Any]]:
    result = client.request("topicForest/threadHistory", {"threadId": thread})
    return result["messages"]  # type: ignore[no-any-return]


def no_paths_or_tracebacks(error: RpcError) -> None:
    text = json.dumps([error.message, error.data])
    assert "Traceback" not in text and "traceback" not in text and ".py" not in text, text


# -- 1. a cancel when the last delta arrives keeps the reply -------------------------------------
def test_a_cancel_at_the_end_of_a_stream_keeps_the_reply(
    tmp_path: Path, stub: ThreadedStubLLM
) -> None:
    replies = [
        f"Reply {n}: set busy_timeout=5000 in store/db.py for the writers." for n in range(8)
    ]
    stub.script(*replies)
    with serve(tmp_path, stub) as client:
        for n, reply in enumerate(replies):
            last = len(split_chunks(reply, 4)) - 1
            sent: list[int] = []

            def on_note(method: str, params: Any, last: int = last, sent: list[int] = sent) -> None:
                if method == "topicForest/chatDelta" and params["index"] == last:
                    client.cancel(sent[0])

            client.on_notification = on_note
            sent.append(
                client.send(
                    "topicForest/chat", {"threadId": "t", "turnId": str(n), "message": f"q{n}"}
                )
            )
            result = client.wait(sent[0], timeout=HANG)  # a result, never -32800
            assert result["reply"] == reply
            assert result["replyMessageId"] is not None
        stored = [m["content"] for m in history(client, "t") if m["role"] == "assistant"]
        assert stored == replies


# -- 2. one bad frame costs one message, not the session ----------------------------------------
GOOD = {"jsonrpc": "2.0", "id": 9, "method": "topicForest/listThreads", "params": {}}
BODY = json.dumps(GOOD).encode()
BAD_FRAMES = {
    "length 10 short": b"Content-Length: %d\r\n\r\n" % (len(BODY) - 10) + BODY,
    "length 10 long": b"Content-Length: %d\r\n\r\n" % (len(BODY) + 10) + BODY,
    "non-numeric": b"Content-Length: abc\r\n\r\n" + BODY,
    "negative": b"Content-Length: -5\r\n\r\n" + BODY,
    "zero": b"Content-Length: 0\r\n\r\n" + BODY,
    "bare body": BODY,
    "garbage, no newline": b"\x00\xffgarbage" * 50,
    "LF only": b"Content-Length: %d\n\n" % len(BODY) + BODY,
    "lower-case header": b"content-length: %d\r\n\r\n" % len(BODY) + BODY,
    "header without body end": b"Content-Length: 5\r\nX-Other\r\n\r\n{}",
    "overlong header line": b"Content-Type: " + b"x" * 70000 + b"\r\n",
    "huge length": b"Content-Length: 99999999999999\r\n\r\n{",
}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioClient]:
    with serve(tmp_path_factory.mktemp("plain")) as client:
        yield client


@pytest.mark.parametrize("name", list(BAD_FRAMES))
def test_a_bad_frame_costs_one_message_not_the_session(plain: StdioClient, name: str) -> None:
    plain.write_raw(BAD_FRAMES[name])
    for _ in range(3):
        assert plain.request("topicForest/listThreads", {}, timeout=HANG) == {"threads": []}
    assert plain.alive()


def test_framing_faults_are_resynchronised_before_pygls_is_loaded_too(tmp_path: Path) -> None:
    """The early-answer loop reads its own frames: a fault there must not cost the session."""
    client = StdioClient(env=SERVER_ENV)
    with client:
        client.write_raw(BAD_FRAMES["length 10 short"] + BAD_FRAMES["bare body"])
        client.initialize([tmp_path], {"storePath": str(tmp_path / ".store")})
        client.write_raw(BAD_FRAMES["length 10 long"] + BAD_FRAMES["garbage, no newline"])
        assert client.request("topicForest/listTopics", {}, timeout=HANG)["topics"] == []


# -- 3. the database deleted while running ------------------------------------------------------
@pytest.mark.parametrize("suffixes", [("",), ("", "-wal", "-shm")])
def test_a_store_deleted_while_running_loses_no_acknowledged_turn(
    tmp_path: Path, stub: ThreadedStubLLM, suffixes: tuple[str, ...]
) -> None:
    acknowledged: list[str] = []
    with serve(tmp_path, stub) as client:
        for n in range(3):
            acknowledged.append(chat(client, "t", str(n), f"before {n}")["reply"])
        db = store_path(tmp_path, tmp_path / ".store")
        for suffix in suffixes:
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        for n in range(3, 6):
            try:
                acknowledged.append(chat(client, "t", str(n), f"after {n}")["reply"])
            except RpcError as error:
                assert error.code == -32005
    with serve(tmp_path, stub) as client:
        stored = [m["content"] for m in history(client, "t") if m["role"] == "assistant"]
    assert len(acknowledged) == 6
    assert stored == acknowledged


# -- 4. a stream that just stops is cut short -----------------------------------------------------
def test_a_stream_closed_without_done_or_finish_is_cut_short(
    tmp_path: Path, stub: ThreadedStubLLM
) -> None:
    stub.fail_kind("chat", "eof")
    with serve(tmp_path, stub) as client:
        try:
            result = chat(client, "t", "1", "hello")
        except RpcError as error:
            assert error.code == -32004 and "ended" in error.message
        else:
            assert result["cancelled"] is True
        replies = [m for m in history(client, "t") if m["role"] == "assistant"]
        assert replies and all(m["cancelled"] for m in replies)


# -- 5. text fields must be encodable; errors carry no traceback ----------------------------------
@pytest.mark.parametrize("method", ["chat", "threadHistory"])
def test_a_lone_surrogate_is_invalid_params_naming_the_field(
    plain: StdioClient, method: str
) -> None:
    params = {"threadId": "\ud800", "turnId": "1", "message": "hi"}
    with pytest.raises(RpcError) as info:
        plain.request("topicForest/" + method, params, timeout=HANG)
    assert info.value.code == -32602 and info.value.data == {"field": "threadId"}
    no_paths_or_tracebacks(info.value)


# -- 7. JSON-RPC and LSP protocol edges ----------------------------------------------------------
def raw_reply(client: StdioClient, data: bytes, msg_id: Any, timeout: float = HANG) -> Any:
    """The response to a hand-made frame: matched by `msg_id` (None: an id-null response)."""
    seen = len(client.orphans)
    client.write_raw(data)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for message in client.orphans[seen:]:
            if message.get("id") == msg_id:
                return message
        time.sleep(0.01)
    raise TimeoutError(f"no response with id {msg_id!r}")


@pytest.mark.parametrize(
    ("body", "msg_id", "codes"),
    [
        (b'{"jsonrpc": "2.0", "id": "u", "method": 5}', "u", {-32600}),
        (b'{"jsonrpc": "2.0", "id": "v", "method": "x\xff\xfe"}', None, {-32700}),
        (b"[" * 1200 + b"]" * 1200, None, {-32700, -32600}),
        (b'{"jsonrpc": "2.0", "id": "w", "method": "m", "params": ' + b"9" * 5000 + b"}", None,
         {-32700, -32600}),
        (b'{"jsonrpc": "2.0", "id": "h", "method": "textDocument/hover", "params": {}}', "h",
         {-32601}),
        (b"{not json", None, {-32700}),
    ],
)  # fmt: skip
def test_protocol_edges_are_answered(
    plain: StdioClient, body: bytes, msg_id: Any, codes: set[int]
) -> None:
    reply = raw_reply(plain, b"Content-Length: %d\r\n\r\n" % len(body) + body, msg_id)
    assert reply["error"]["code"] in codes
    assert "data" not in reply["error"] or "traceback" not in json.dumps(reply["error"]["data"])
    assert plain.request("topicForest/listThreads", {}, timeout=HANG) == {"threads": []}


def test_requests_before_initialize_are_refused_without_a_global_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = SERVER_ENV | {"HOME": str(home), "XDG_DATA_HOME": str(home / "data")}
    with StdioClient(env=env) as client:
        request = {"jsonrpc": "2.0", "id": "early", "method": "topicForest/listTopics"}
        reply = raw_reply(client, frame(request), "early")
        assert reply["error"]["code"] == -32002
        client.initialize([tmp_path], {"storePath": str(tmp_path / ".store")})
        assert client.request("topicForest/listTopics", {})["topics"] == []
    assert not (home / "data").exists()


def test_requests_after_shutdown_are_invalid_and_exit_codes_follow_lsp(tmp_path: Path) -> None:
    client = serve(tmp_path)
    client.request("shutdown", None)
    reply = raw_reply(client, frame({"jsonrpc": "2.0", "id": "late", "method": "shutdown"}), "late")
    assert reply["error"]["code"] == -32600
    client.notify("exit", None)
    assert client.process.wait(timeout=HANG) == 0
    client.close()
    unclean = serve(tmp_path)
    unclean.notify("exit", None)
    assert unclean.process.wait(timeout=HANG) == 1
    unclean.close()


# -- 9. storePath ------------------------------------------------------------------------------
def test_a_relative_store_path_is_refused_and_an_open_directory_tightened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    with serve(tmp_path, storePath="../escape/store") as client:
        with pytest.raises(RpcError):  # no model: but nothing may be created relative to cwd
            chat(client, "t", "1", "hi")
        client.request("topicForest/listTopics", {})
    assert not (tmp_path / "escape").exists()
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o777)
    loose.chmod(0o777)
    with serve(tmp_path, storePath=str(loose)) as client:
        client.request("topicForest/listTopics", {})
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o700


# -- 10. a provider that never answers -----------------------------------------------------------
def test_a_silent_provider_fails_on_the_first_byte_timeout(
    tmp_path: Path, stub: ThreadedStubLLM
) -> None:
    stub.fail_kind("chat", "hang")
    with serve(tmp_path, stub, chatFirstByteTimeout=1) as client:
        with pytest.raises(RpcError) as info:  # not the whole-call timeout: the message says
            chat(client, "t", "1", "hello")
        assert info.value.code == -32004 and "first byte" in info.value.message


def test_the_test_client_closes_after_a_write_to_a_killed_server() -> None:
    """What test_kill does: a request written as the server dies stays in the pipe's buffer,
    and closing the client must not raise on flushing it."""
    client = StdioClient(env=SERVER_ENV)
    client.process.kill()
    client.process.wait()
    with pytest.raises(OSError):
        client.notify("initialized", {})
    client.close()
    assert client.process.stdin is not None and client.process.stdin.closed
