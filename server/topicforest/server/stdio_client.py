"""A small synchronous JSON-RPC client for the server process over stdio.

Used by the demo, the benchmarks and the fuzz test (which need a plain blocking client rather than
pytest-lsp's asyncio one). A reader thread parses frames; responses are matched by id,
notifications are recorded, and requests from the server (progress tokens, configuration) are
answered with null so the server never waits on us.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

SERVE = [sys.executable, "-m", "topicforest", "serve"]


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class StdioClient:
    def __init__(
        self,
        argv: Sequence[str] = SERVE,
        *,
        env: dict[str, str] | None = None,
        stderr: int | IO[Any] | None = subprocess.DEVNULL,
    ) -> None:
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, **(env or {})},
        )
        self.notifications: list[tuple[str, Any]] = []
        self.orphans: list[dict[str, Any]] = []  # responses matching no request (id null)
        self.on_notification: Callable[[str, Any], None] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int | str, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_loop, name="rpc-reader", daemon=True)
        self._reader.start()

    # -- sending ---------------------------------------------------------------------------
    def _write(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode("utf-8")
        assert self.process.stdin is not None
        with self._write_lock:
            self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.process.stdin.flush()

    def write_raw(self, data: bytes) -> None:
        """Bytes straight onto the server's stdin (framing faults, in tests)."""
        assert self.process.stdin is not None
        with self._write_lock:
            self.process.stdin.write(data)
            self.process.stdin.flush()

    def send(self, method: str, params: Any = None) -> int:
        """Send a request; returns its id for `wait` (or `cancel`)."""
        msg_id = next(self._ids)
        with self._lock:
            self._pending[msg_id] = queue.Queue(maxsize=1)
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def wait(self, msg_id: int, timeout: float = 60.0) -> Any:
        try:
            reply = self._pending[msg_id].get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no response to request {msg_id} in {timeout} s") from None
        finally:
            with self._lock:
                self._pending.pop(msg_id, None)
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error.get("code", 0), error.get("message", ""), error.get("data"))
        return reply.get("result")

    def request(self, method: str, params: Any = None, timeout: float = 60.0) -> Any:
        return self.wait(self.send(method, params), timeout)

    def notify(self, method: str, params: Any = None) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def cancel(self, msg_id: int) -> None:
        self.notify("$/cancelRequest", {"id": msg_id})

    # -- lifecycle -------------------------------------------------------------------------
    def initialize(
        self, folders: Sequence[Path] = (), settings: dict[str, Any] | None = None
    ) -> Any:
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": None,
                "capabilities": {"window": {"workDoneProgress": True}},
                "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders],
                "initializationOptions": {"topicForest": settings or {}},
            },
        )
        self.notify("initialized", {})
        return result

    def close(self, timeout: float = 5.0) -> None:
        if self.process.poll() is None:
            try:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
                self.process.wait(timeout=timeout)
            except (OSError, TimeoutError, RpcError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                # a write the dead server never read stays buffered: closing flushes it again
                with contextlib.suppress(BrokenPipeError):
                    stream.close()

    def __enter__(self) -> StdioClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_notification(
        self, method: str, predicate: Callable[[Any], bool] | None = None, timeout: float = 30.0
    ) -> Any:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            batch = self.notifications[seen:]
            seen += len(batch)
            for name, params in batch:
                if name == method and (predicate is None or predicate(params)):
                    return params
            time.sleep(0.01)
        raise TimeoutError(f"no {method} notification in {timeout} s")

    # -- reading ---------------------------------------------------------------------------
    def _read_loop(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    self._server_gone()
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            message = json.loads(stream.read(length))
            self._dispatch(message)

    def _server_gone(self) -> None:
        """The server exited: requests still waiting fail now rather than time out."""
        gone = {"error": {"code": -32099, "message": "the server exited"}}
        with self._lock:
            for waiter in self._pending.values():
                if waiter.empty():
                    waiter.put(gone)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # a request from the server
            self._write({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif "method" in message:
            self.notifications.append((message["method"], message.get("params")))
            if self.on_notification is not None:
                self.on_notification(message["method"], message.get("params"))
        else:
            with self._lock:
                waiter = self._pending.get(message.get("id", -1))
            if waiter is not None:
                waiter.put(message)
            else:
                self.orphans.append(message)
