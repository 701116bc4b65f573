"""`serve --tcp` on an address other machines can reach says so: the server has no
authentication, so whoever connects reads and changes the memory and chats on the user's key."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading

import pytest

from topicforest.server.commands import loopback

HANG = 120  # seconds: bounds a hang only


@pytest.mark.parametrize(
    ("host", "local"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.20", False), ("example.org", False)],
)  # fmt: skip
def test_which_addresses_are_loopback(host: str, local: bool) -> None:
    assert loopback(host) is local


def test_serving_on_every_interface_warns() -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "topicforest", "serve", "--tcp", "0.0.0.0:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert server.stderr is not None
    threading.Thread(target=lambda: lines.put(server.stderr.readline()), daemon=True).start()
    try:
        first = lines.get(timeout=HANG)  # the warning comes before the server listens
    finally:
        server.kill()
        server.wait(HANG)
    assert "warning" in first and "no authentication" in first and "0.0.0.0" in first
