"""A seeded fuzz of the wire (issue 11): 1,000+ malformed messages and framing faults, every method.

Each fault is followed by a sentinel request, so every outcome is pinned to its fault: a request
gets its answer (a result or a documented error), a notification or unframed input gets the
documented silence, or an id-null -32700/-32600 when a frame's body is not a JSON-RPC message
(docs/protocol.md, "Malformed input"). After each category the server must still answer
correctly: a topic list, a chat turn stored in full.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from topicforest.server.protocol import ERRORS, METHODS, PREFIX
from topicforest.server.stdio_client import RpcError, StdioClient
from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import HANG, SERVER_ENV

SEED = 11
DOCUMENTED = {*ERRORS.values(), -32700, -32600, -32601}  # -32603 would be a bug: never expected
REQUESTS = [m.name for m in METHODS if m.kind == "request"] + [
    "textDocument/hover",
    "textDocument/completion",
    "workspace/executeCommand",
    "initialize",
    "no/such/method",
]
NOTIFICATIONS = [
    m.name for m in METHODS if m.kind == "notification" and m.direction == "clientToServer"
] + [
    "initialized",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
    "$/cancelRequest",
    "$/setTrace",
    "no/such/notification",
]


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(10 if depth < 3 else 7)
    return [
        lambda: None,
        lambda: rng.choice([True, False]),
        lambda: rng.randint(-(2**63), 2**63),
        lambda: rng.uniform(-1e9, 1e9),
        lambda: "".join(
            rng.choice('ab \n\u2028\ud800\x00é🙂{}"\\') for _ in range(rng.randrange(8))
        ),
        lambda: rng.choice(["t1", "", "x" * 300, "file:///tmp/x.py", "\ud800"]),
        lambda: rng.randint(0, 12),
        lambda: [value(rng, depth + 1) for _ in range(rng.randrange(4))],
        lambda: {rng.choice(KEYS): value(rng, depth + 1) for _ in range(rng.randrange(5))},
        lambda: {rng.choice(KEYS): value(rng, depth + 1) for _ in range(rng.randrange(5))},
    ][kind]()


KEYS = ["threadId", "turnId", "message", "topicId", "query", "limit", "workspaceUri", "uri",
        "activeFile", "pinned", "textDocument", "id", "capabilities", "x"]  # fmt: skip


class Wire:
    """The server under fuzz, and the sentinel that pins each outcome to its fault."""

    def __init__(self, client: StdioClient) -> None:
        self.client = client
        self.sent = 0
        self.sentinels = 0

    def sentinel(self) -> None:
        """A request after the fault, answered correctly (so the fault cost at most itself)."""
        self.sentinels += 1
        msg_id = f"sentinel-{self.sentinels}"
        self.client.write_raw(
            frame({"jsonrpc": "2.0", "id": msg_id, "method": PREFIX + "listThreads"})
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for message in self.client.orphans:
                if message.get("id") == msg_id:
                    assert "threads" in message["result"], message
                    self.client.orphans.remove(message)
                    return
            time.sleep(0.0005)
        raise AssertionError(f"the server went deaf after fault {self.sent}")

    def fault(self, data: bytes, allowed: set[int], *, silence: bool) -> None:
        """Send a fault; afterwards the id-null replies it caused must have `allowed` codes,
        and there must be one unless `silence` is documented for it."""
        self.sent += 1
        self.client.write_raw(data)
        self.sentinel()
        replies, self.client.orphans[:] = list(self.client.orphans), []
        codes = [reply["error"]["code"] for reply in replies]
        assert all(code in allowed for code in codes), (data[:200], replies)
        assert silence or len(codes) == 1, (data[:200], replies)

    def call(self, method: str, params: Any) -> None:
        """A request with random params: a result or a documented error, never silence."""
        self.sent += 1
        try:
            result = self.client.request(method, params, timeout=HANG)
        except RpcError as error:
            assert error.code in DOCUMENTED, (method, params, error)
            assert "traceback" not in json.dumps(error.data), error.data
        else:
            assert method in ("initialize", "shutdown") or isinstance(result, dict | None)

    def still_correct(self, turn: str) -> None:
        assert self.client.alive()
        before = len(self.history())
        result = self.client.request(
            PREFIX + "chat", {"threadId": "check", "turnId": turn, "message": f"check {turn}"}
        )
        assert not result["cancelled"] and result["reply"]
        assert [m["content"] for m in self.history()[before:]] == [f"check {turn}", result["reply"]]
        assert "topics" in self.client.request(PREFIX + "listTopics", {})

    def history(self) -> list[dict[str, Any]]:
        result = self.client.request(PREFIX + "threadHistory", {"threadId": "check"})
        return result["messages"]  # type: ignore[no-any-return]


def frame(payload: Any) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    folder: Path = tmp_path_factory.mktemp("fuzz-wire")
    with ThreadedStubLLM(chunks=2) as stub, StdioClient(env=SERVER_ENV) as client:
        client.initialize(
            [folder],
            {"chatModel": "openai/stub", "apiBase": stub.base_url, "historyBudget": 256,
             "storePath": str(folder / ".store")},
        )  # fmt: skip
        checked = Wire(client)
        checked.still_correct("start")
        yield checked
        assert checked.sent >= 250  # per category: 1,000+ in all


def params_faults(wire: Wire, rng: random.Random) -> None:
    for _ in range(300):
        method = rng.choice(REQUESTS)
        wire.call(PREFIX + method if "/" not in method else method, value(rng))
    for _ in range(100):  # notifications: silence, and no harm
        wire.fault(
            frame({"jsonrpc": "2.0", "method": rng.choice(NOTIFICATIONS), "params": value(rng)}),
            set(),
            silence=True,
        )


def envelope_faults(wire: Wire, rng: random.Random) -> None:
    shapes: list[Callable[[], Any]] = [
        lambda: {"jsonrpc": "2.0", "id": rng.randint(1, 9), "method": value(rng)},
        lambda: {"jsonrpc": "2.0", "id": rng.choice([True, 1.5, [], {}]), "method": "x"},
        lambda: {"jsonrpc": rng.choice(["1.0", 2, None]), "id": 3, "method": PREFIX + "listTopics"},
        lambda: {"id": 4, "method": PREFIX + "listTopics"},
        lambda: [{"jsonrpc": "2.0", "id": 5, "method": PREFIX + "listTopics"}],
        lambda: value(rng) if rng.random() < 0.5 else rng.choice([1, "s", None, []]),
        lambda: {"jsonrpc": "2.0"},
    ]
    for _ in range(250):
        payload = rng.choice(shapes)()
        if isinstance(payload, dict) and isinstance(payload.get("method"), str):
            continue  # a well-formed envelope: the params category covers it
        # A reply may carry the request's id when it had a usable one: both are accepted here
        wire.client.orphans.clear()
        wire.fault(frame(payload), {-32600, -32601, -32700}, silence=False)


def body_faults(wire: Wire, rng: random.Random) -> None:
    good = json.dumps({"jsonrpc": "2.0", "id": 7, "method": PREFIX + "listTopics"}).encode()
    shapes: list[Callable[[], bytes]] = [
        lambda: good[: rng.randrange(1, len(good))],
        lambda: good.replace(b"listTopics", b"list\xff\xfeTopics"),
        lambda: b"[" * rng.randint(1000, 3000) + b"]" * 10,
        lambda: b'{"jsonrpc": "2.0", "id": 8, "method": "m", "params": ' + b"7" * 5000 + b"}",
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60))).replace(b"\n", b""),
        lambda: b"\xef\xbb\xbf" + good,  # a byte-order mark: JSON forbids it
    ]
    for _ in range(250):
        wire.fault(framed(rng.choice(shapes)()), {-32700, -32600}, silence=False)


def framing_faults(wire: Wire, rng: random.Random) -> None:
    body = json.dumps({"jsonrpc": "2.0", "method": "$/setTrace", "params": {}}).encode()
    shapes: list[Callable[[], bytes]] = [
        lambda: b"Content-Length: %d\r\n\r\n" % (len(body) + rng.randint(1, 40)) + body,
        lambda: b"Content-Length: %d\r\n\r\n" % max(1, len(body) - rng.randint(1, 40)) + body,
        lambda: (
            b"Content-Length: %s\r\n\r\n" % rng.choice([b"abc", b"-5", b"0", b"", b"1e3"]) + body
        ),
        lambda: body,
        lambda: bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 300))),
        lambda: b"Content-Length: %d\n\n" % len(body) + body,
        lambda: b"content-length: %d\r\n\r\n" % len(body) + body,
        lambda: b"X-Header: %d\r\n\r\n" % rng.randrange(99) + body,
        lambda: b"Content-Type: " + b"x" * rng.randint(9000, 20000) + b"\r\n\r\n" + body,
        lambda: b"Content-Length: 99999999999\r\n\r\n" + body,
        lambda: b"\r\n" * rng.randint(1, 5),
    ]
    for _ in range(250):
        wire.fault(rng.choice(shapes)(), {-32700, -32600}, silence=True)


CATEGORIES = [params_faults, envelope_faults, body_faults, framing_faults]


@pytest.mark.parametrize("category", CATEGORIES, ids=lambda c: c.__name__)
def test_every_fault_gets_an_answer_or_documented_silence(
    wire: Wire, category: Callable[[Wire, random.Random], None]
) -> None:
    category(wire, random.Random(f"{SEED}-{category.__name__}"))
    wire.still_correct(category.__name__)
