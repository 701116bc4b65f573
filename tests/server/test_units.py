"""Fast checks without a server process: settings, the protocol table, stdout protection."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from topicforest.server import codegen, protocol, validation
from topicforest.workspace.settings import DEFAULTS, Settings, parse_settings, to_wire


def test_settings_parse_camel_case_and_keep_previous_values_on_errors() -> None:
    previous = Settings(chat_model="gpt-4o-mini", max_topics=7)
    update = parse_settings(
        {
            "topicForest": {
                "chatModel": "openai/local",
                "summaryModels": ["a", "b"],
                "apiBase": "http://127.0.0.1:8000/v1",
                "historyBudget": 4096,
                "mergeThreshold": 0.3,
                "maxTopics": "twelve",
                "openaiApiKey": "sk-nope",
                "colour": "blue",
            }
        },
        previous,
    )
    s = update.settings
    assert (s.chat_model, s.summary_models, s.history_budget) == ("openai/local", ("a", "b"), 4096)
    assert s.merge_threshold == 0.3 and s.api_base == "http://127.0.0.1:8000/v1"
    assert s.max_topics == 7  # invalid: the previous value stays
    assert update.errors == ["topicForest.maxTopics: expected int, got str; keeping 7"]
    assert any("openaiApiKey" in w and "environment" in w for w in update.warnings)
    assert any("colour" in w for w in update.warnings)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("historyBudget", 10),
        ("historyBudget", "lots"),
        ("historyBudget", True),
        ("mergeThreshold", 2),
        ("maxTopics", 0),
        ("apiBase", "localhost:8000"),
        ("chatModel", ""),
        ("summaryModels", "gpt-4o-mini"),
        ("summaryModels", [1]),
    ],
)
def test_each_invalid_value_is_reported_by_key(key: str, value: object) -> None:
    update = parse_settings({key: value}, DEFAULTS)
    assert len(update.errors) == 1 and update.errors[0].startswith(f"topicForest.{key}: ")
    assert update.settings == DEFAULTS


def test_null_and_absent_keys_mean_defaults() -> None:
    previous = Settings(chat_model="x", history_budget=1024)
    assert parse_settings({"chatModel": None}, previous).settings == DEFAULTS
    assert parse_settings(None, previous).settings == previous  # nothing sent: nothing changes
    assert parse_settings([], previous).errors
    assert to_wire(DEFAULTS)["historyBudget"] == "auto"


def test_protocol_export_is_checked_in_and_matches_the_server() -> None:
    assert codegen.EXPORT_PATH.read_text(encoding="utf-8") == codegen.export_text(), (
        "run `python -m topicforest.server.codegen --write`"
    )
    table = json.loads(codegen.export_text())
    from topicforest.server.app import create_server

    registered = {m for m in create_server().protocol.fm.features if m.startswith("topicForest/")}
    client_to_server = {
        n for n, m in table["methods"].items() if m["direction"] == "clientToServer"
    }
    assert registered == client_to_server
    assert set(table["errors"].values()) >= {-32602, -32001, -32002, -32003, -32004, -32005}


def test_docs_describe_every_method_and_error() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text("utf-8")
    for method in protocol.METHODS:
        assert f"### `{method.name}`" in docs, method.name
    for name, code in protocol.ERRORS.items():
        assert f"| {code} | {name} |" in docs, name


def test_validate_applies_defaults_and_names_fields() -> None:
    pin = protocol.BY_NAME["topicForest/pinTopic"]
    assert validation.validate(pin, {"topicId": 3}) == {
        "workspaceUri": None,
        "topicId": 3,
        "pinned": True,
        "threadId": None,
    }
    with pytest.raises(validation.ProtocolError) as info:
        validation.validate(pin, {"topicId": 2**60})
    assert info.value.code == protocol.INVALID_PARAMS and info.value.data == {"field": "topicId"}


def run_python(code: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)


def test_stray_prints_cannot_reach_the_json_rpc_channel() -> None:
    done = run_python(
        "import os, sys\n"
        "from topicforest.server.stdio import protect_stdout\n"
        "_, rpc = protect_stdout()\n"
        "print('stray print')\n"
        "os.write(1, b'stray fd write\\n')\n"
        "os.system('echo stray child')\n"
        "rpc.write(b'FRAME'); rpc.flush()\n"
    )
    assert done.stdout == b"FRAME"
    assert b"stray print" in done.stderr and b"stray fd write" in done.stderr
    assert b"stray child" in done.stderr


def test_building_the_server_does_not_import_litellm() -> None:
    done = run_python(
        "import sys\n"
        "from topicforest.server.app import create_server\n"
        "create_server()\n"
        "print('litellm' in sys.modules)\n"
    )
    assert done.stdout.strip() == b"False", done.stderr


def test_serve_over_tcp_answers_initialize() -> None:
    import json as _json
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "topicforest", "serve", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                assert time.monotonic() < deadline, "the TCP server never listened"
                time.sleep(0.1)
        with conn:
            body = _json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"processId": None, "rootUri": None, "capabilities": {}},
                }
            ).encode()
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            stream = conn.makefile("rb")
            length = int(stream.readline().split(b":")[1])
            while stream.readline().strip():
                pass  # other headers
            reply = _json.loads(stream.read(length))
            assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "topicforest"
    finally:
        server.terminate()
        server.wait(timeout=120)


def test_serve_rejects_a_bad_tcp_address() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "topicforest", "serve", "--tcp", "localhost"],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2 and b"HOST:PORT" in done.stderr


def _client_and_stderr() -> tuple[list[str], Any, io.StringIO, logging.Handler]:
    """A client whose logMessage lines land in a list, and a stderr handler writing to a string."""
    from types import SimpleNamespace

    from topicforest.server.stdio import RedactingFormatter, StderrHandler

    sent: list[str] = []
    client = SimpleNamespace(
        protocol=SimpleNamespace(writer=object()),
        window_log_message=lambda params: sent.append(params.message),
    )
    stream = io.StringIO()
    stderr = StderrHandler(stream)
    stderr.setFormatter(RedactingFormatter("%(name)s: %(message)s"))
    return sent, client, stream, stderr


async def test_a_log_line_sent_to_the_client_is_not_repeated_on_stderr() -> None:
    from topicforest.server.logbridge import LogBridge

    sent, client, stream, stderr = _client_and_stderr()
    bridge = LogBridge(client)  # type: ignore[arg-type]
    ours, theirs = logging.getLogger("topicforest.test_units"), logging.getLogger("pygls.fake")
    ours.addHandler(bridge)
    root = logging.getLogger()
    root.addHandler(stderr)
    try:
        ours.warning("memory opened")
        theirs.warning("pygls says")
    finally:
        ours.removeHandler(bridge)
        root.removeHandler(stderr)
    assert sent == ["topicforest.test_units: memory opened"]
    assert stream.getvalue() == "pygls.fake: pygls says\n"


async def test_an_early_log_line_reaches_the_client_channel_once() -> None:
    """Logged while `early` answers: held, then sent as logMessage once the client said
    `initialized` — not also written to stderr, which editors show in the same channel."""
    import asyncio

    from topicforest.server.early import Backlog
    from topicforest.server.logbridge import LogBridge

    sent, client, stream, stderr = _client_and_stderr()
    ours = logging.getLogger("topicforest.test_units")
    root = logging.getLogger()
    root.addHandler(stderr)
    held = Backlog(logging.INFO)
    ours.addHandler(held)
    try:
        ours.warning("workspace memory opened")
        ours.removeHandler(held)
        bridge = LogBridge(client)  # type: ignore[arg-type]
        bridge.backlog, held.records = held.records, []  # as Front.take_logs hands them over
        bridge.attach(asyncio.get_running_loop())
        assert sent == ["topicforest.test_units: workspace memory opened"]
        assert stream.getvalue() == ""

        # the server never started, or the client never said `initialized`: stderr gets them
        ours.addHandler(held)
        ours.warning("the store is locked")
        ours.removeHandler(held)
        held.spill()
        lost = logging.LogRecord("topicforest.x", logging.ERROR, "", 0, "lost?", (), None)
        bridge.backlog = [lost]
        bridge.spill()
    finally:
        ours.removeHandler(held)
        root.removeHandler(stderr)
    locked = "topicforest.test_units: the store is locked\n"
    assert stream.getvalue() == locked + "topicforest.x: lost?\n"
    assert len(sent) == 1
