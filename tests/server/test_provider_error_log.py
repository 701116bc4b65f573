"""A provider failure (a refused key, an unknown model) is an expected condition: the server's log
says what failed in one line at warning level, in plain words and without the key; its traceback
is there only at debug level (each failure once wrote ~70 traceback lines at error level)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicforest.server.protocol import PREFIX, PROVIDER_ERROR
from topicforest.server.stdio_client import SERVE, RpcError, StdioClient
from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import SERVER_ENV

HANG = 120  # seconds: bounds a hang only
SECRET = "sk-leakedbyprovider0123456789"  # quoted back by a careless provider
WARNING, LOG = 2, 4  # window/logMessage types


def failing_turns(tmp_path: Path, level: str) -> tuple[str, list[tuple[int, str]]]:
    """Two failed turns (key refused, model unknown); the server's stderr and logMessages."""
    stderr = (tmp_path / f"stderr-{level}").open("w+")
    with (
        ThreadedStubLLM() as stub,
        StdioClient([*SERVE, "--log-level", level], env=SERVER_ENV, stderr=stderr) as client,
    ):
        client.initialize(
            [tmp_path],
            {
                "storePath": str(tmp_path / f".store-{level}"),
                "chatModel": "openai/stub-chat",
                "apiBase": stub.base_url,
            },
        )
        stub.fail_kind("chat", "status", status=401, message=f"Incorrect API key: {SECRET}")
        stub.fail_kind("chat", "status", status=404, message="The model does not exist")
        for turn in ("1", "2"):
            params = {"threadId": "t", "turnId": turn, "message": f"question {turn}"}
            with pytest.raises(RpcError) as info:
                client.request(PREFIX + "chat", params, timeout=HANG)
            assert info.value.code == PROVIDER_ERROR
        client.request(PREFIX + "listTopics", {}, timeout=HANG)  # the logs before it are out
        logged = [
            (p["type"], p["message"]) for m, p in client.notifications if m == "window/logMessage"
        ]
    stderr.seek(0)
    return stderr.read(), logged


def test_a_provider_failure_is_one_warning_line(tmp_path: Path) -> None:
    stderr, logged = failing_turns(tmp_path, "INFO")
    text = stderr + "\n".join(message for _, message in logged)
    assert "Traceback" not in text, text
    assert SECRET not in text
    about = [(kind, m) for kind, m in logged if "openai/stub-chat" in m]
    assert [kind for kind, _ in about] == [WARNING, WARNING], logged
    refused, unknown = (message for _, message in about)
    assert "key was refused" in refused and "\n" not in refused
    assert "does not know the model" in unknown and "\n" not in unknown


def test_its_traceback_is_logged_at_debug_level(tmp_path: Path) -> None:
    stderr, logged = failing_turns(tmp_path, "DEBUG")
    tracebacks = [m for kind, m in logged if kind == LOG and "Traceback" in m]
    assert len(tracebacks) == 2, logged
    assert all("ChatModelError" in m for m in tracebacks)
    assert SECRET not in stderr + "\n".join(m for _, m in logged)
