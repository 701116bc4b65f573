"""An expected refusal (bad params, an unknown topic, no chat model) is answered with its
documented error and logged in one line: no traceback (a fuzz run wrote 2,671 of them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicforest.server.protocol import PREFIX
from topicforest.server.stdio_client import RpcError, StdioClient

from .conftest import SERVER_ENV

HANG = 120  # seconds: bounds a hang only


def test_refusals_log_one_line_each(tmp_path: Path) -> None:
    stderr = (tmp_path / "stderr").open("w+")
    refusals = [
        ("chat", {"threadId": "t", "turnId": "1", "message": "hi"}),  # no chat model
        ("previewTopic", {"topicId": 999_999}),  # unknown topic
        ("chat", {"threadId": "t", "turnId": "2", "message": 5}),  # invalid params
        ("renameThread", {"threadId": "nowhere", "title": "x"}),  # unknown thread
    ]
    with StdioClient(env=SERVER_ENV, stderr=stderr) as client:
        client.initialize([tmp_path], {"storePath": str(tmp_path / ".store")})
        for method, params in refusals * 3:  # pygls serves them all (chat is never early)
            with pytest.raises(RpcError):
                client.request(PREFIX + method, params, timeout=HANG)
        logged = [p["message"] for m, p in client.notifications if m == "window/logMessage"]
    stderr.seek(0)
    log = stderr.read() + "\n".join(logged)
    assert "Traceback" not in log, log
    assert sum("refused request" in line for line in log.splitlines()) >= len(refusals)
