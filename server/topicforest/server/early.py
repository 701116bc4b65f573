"""Early answers: a new window's first requests are answered while pygls is still loading.

Importing pygls means importing lsprotocol, whose ~570 attrs classes are built at import time:
most of a second on a slow machine, more than everything else a new window waits for before its
Topics view fills. So `topicforest serve` on stdio starts here, with only the engine, the store
and the protocol table loaded:

1. `initialize` is answered at once, with the capabilities pygls announces (`capabilities`); the
   workspaces then open their stores, and a thread starts importing the pygls server.
2. Until that import is done, `initialized`, `activeFileChanged` and the read-only requests in
   EARLY_REQUESTS are handled here, by the handlers pygls would call, through `rpc.call`, each
   after loading what other windows committed (the store watcher starts with pygls).
3. Then pygls takes over the stream: it is first handed the `initialize` (its answer dropped: the
   client has one) and `initialized` handled here, then every byte not handled yet. The
   workspaces, stores open, carry over. pygls also takes over early, waiting for the import, as
   soon as a message comes that is not handled here or whose handler raised: its answer (an
   error, say) is then exactly pygls' own.

TOPICFOREST_EARLY=0 turns this off: pygls answers everything (as it always does over TCP).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

from topicforest.server.features import context, documents, threads, topics
from topicforest.server.framing import BadMessage, FrameParser, Gate, Skipped, decode
from topicforest.server.identity import SERVER_NAME, server_version
from topicforest.server.protocol import BY_NAME, METHODS, PREFIX
from topicforest.server.rpc import Handler, call
from topicforest.server.stdio import SENT_TO_CLIENT, protect_stdout, setup_stderr_logging, to_stderr
from topicforest.workspace.registry import Workspaces

log = logging.getLogger(__name__)

EARLY_ENV = "TOPICFOREST_EARLY"
SERVER_MODULE = "topicforest.server.app"
REPLAY_ID = "topicforest-early-initialize"  # the id of the `initialize` handed to pygls again
CONTENT_TYPE = b"application/vscode-jsonrpc; charset=utf-8"
# What early answers, by the protocol table's `early` column; the handlers are the very ones
# pygls calls (features whose modules import no pygls).
MEMORY_HANDLERS: dict[str, Handler] = {
    PREFIX + verb: handler
    for routes in (topics.ROUTES, context.ROUTES, threads.ROUTES, documents.ROUTES)
    for verb, handler in routes.items()
}
EARLY_REQUESTS: dict[str, Handler] = {
    m.name: MEMORY_HANDLERS[m.name] for m in METHODS if m.early and m.kind == "request"
}
EARLY_NOTIFICATIONS: dict[str, Handler] = {
    m.name: MEMORY_HANDLERS[m.name] for m in METHODS if m.early and m.kind == "notification"
}
ENCODINGS = ("utf-8", "utf-16", "utf-32")


def capabilities(client: object) -> dict[str, Any]:
    """The ServerCapabilities pygls 2.1.1 builds for this server's features, given the client's.

    Only two things depend on the client here: the position encoding (the client's first
    supported one, else utf-16) and whether willSave/willSaveWaitUntil are present (false, as
    the client sent them). tests/server/test_early.py compares this with pygls itself.
    """
    caps = client if isinstance(client, dict) else {}
    general = caps.get("general") or {}
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    encoding = next((e for e in offered or () if e in ENCODINGS), "utf-16")
    sync: dict[str, Any] = {"openClose": True, "change": 2}  # Incremental
    client_sync = (caps.get("textDocument") or {}).get("synchronization") or {}
    for key in ("willSave", "willSaveWaitUntil"):
        if client_sync.get(key) is not None:
            sync[key] = False
    sync["save"] = False
    return {
        "positionEncoding": encoding,
        "textDocumentSync": sync,
        "executeCommandProvider": {"commands": []},
        "workspace": {
            "workspaceFolders": {"supported": True, "changeNotifications": True},
            "fileOperations": {},
        },
    }


class NotHere(Exception):
    """A message for pygls: it takes over, waiting for its import if need be."""


@dataclass
class Memories:
    """What the memory-only handlers use (`rpc.Host`), before the server exists."""

    workspaces: Workspaces


class Backlog(logging.Handler):
    """Our log records until the server can send them to the client.

    They are held, not written to stderr too: editors show stderr and window/logMessage in one
    output channel, so each early line appeared twice. The log bridge writes to stderr what it
    cannot send, and `spill` does if the server never starts.
    """

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        setattr(record, SENT_TO_CLIENT, True)  # the bridge sends it (stderr skips it)
        self.records.append(record)

    def spill(self) -> None:
        """The server will not start: what was held goes to stderr after all."""
        records, self.records = self.records, []
        for record in records:
            to_stderr(record)


def frame(payload: dict[str, Any]) -> bytes:
    """A message framed as pygls frames it."""
    body = json.dumps(payload).encode("utf-8")
    header = b"Content-Length: %d\r\nContent-Type: %s\r\n\r\n" % (len(body), CONTENT_TYPE)
    return header + body


def load_server() -> None:
    importlib.import_module(SERVER_MODULE)


class Front:
    def __init__(
        self,
        stdin: BinaryIO,
        stdout: BinaryIO,
        log_level: int = logging.INFO,
        load: Callable[[], None] = load_server,
    ) -> None:
        self.stdin = stdin  # read here through its fd, unbuffered: pygls reads on from it
        self.load = load  # runs on a thread; returning means pygls can take over
        self.stdout = stdout
        self.workspaces: Workspaces | None = None
        self.parser = FrameParser()  # read, not handled: pygls reads it first
        self.current = b""  # the frame being handled (pygls' if it raises NotHere)
        self.gate = Gate()  # the lifecycle state, handed on to pygls' reader
        self.replay: list[bytes] = []  # frames handled here that pygls must see too
        self.initialize_result: dict[str, Any] | None = None  # as answered here
        self.answered = 0
        self._loader: threading.Thread | None = None
        self._loaded_r = self._loaded_w = -1  # a byte on this pipe: pygls is loaded
        self.backlog = Backlog(log_level)
        logging.getLogger("topicforest").addHandler(self.backlog)

    @property
    def buffer(self) -> bytes:
        """Read but not handled (pygls reads it after the replay)."""
        return self.current + self.parser.pending()

    # -- the loop ----------------------------------------------------------------------------
    def serve(self) -> None:
        """Handle what can be handled here until the pygls server is loaded or needed."""
        self._loaded_r, self._loaded_w = os.pipe()
        try:
            while True:
                item = self.parser.next()
                if item is None:
                    if not self._read():
                        break
                    continue
                if isinstance(item, Skipped):
                    log.warning("%s", item.describe())
                    continue
                self.current = item.raw
                reply = self._handle(item.body, item.raw)  # NotHere: the frame is pygls'
                self.current = b""
                if reply is not None:
                    self._send(reply)
        except NotHere as exc:
            log.debug("pygls takes over: %s", exc)
        except Exception:  # a bug here must not cost the session: pygls reads what is left
            log.exception("early answers stopped; the language server takes over")
        if self._loader is not None:
            self._loader.join()
        os.close(self._loaded_r)
        os.close(self._loaded_w)
        if self.answered:
            log.info("answered %d request(s) while the language server loaded", self.answered)

    def _read(self) -> bool:
        """Wait for input; False once pygls is loaded or the input ended (pygls' turn)."""
        ready, _, _ = select.select([self.stdin.fileno(), self._loaded_r], [], [])
        if self._loaded_r in ready:
            return False
        data = os.read(self.stdin.fileno(), 65536)
        self.parser.feed(data)
        return bool(data)

    def _load(self) -> None:
        try:  # an error here is printed, then raised again by run_stdio's own import
            self.load()
        finally:
            os.write(self._loaded_w, b"!")

    # -- messages ----------------------------------------------------------------------------
    def _handle(self, body: bytes, raw: bytes) -> dict[str, Any] | None:
        """The reply to send, if any, once the frame is handled; NotHere if it is pygls'."""
        gate = Gate()  # checked on a copy: a message pygls takes over must pass pygls' gate
        gate.initialized, gate.shut_down = self.gate.initialized, self.gate.shut_down
        try:
            message = decode(body)
            if not gate.check(message):
                log.warning("ignored %s: the server is not serving it now", message["method"])
                return None
        except BadMessage as exc:
            log.warning("refused a message: %s", exc)
            return exc.reply
        method, params = message.get("method"), message.get("params")
        if not isinstance(method, str):
            raise NotHere("a response")
        if "id" not in message:
            self._notification(method, params, raw)
            return None
        if method == "initialize" and self.workspaces is None:
            result = self.initialize_result = self._initialize(params)
            self.replay.append(frame({**message, "id": REPLAY_ID}))
        elif method in EARLY_REQUESTS and self.workspaces is not None:
            result = self._call(EARLY_REQUESTS[method], method, params)
        else:
            raise NotHere(f"{method} is pygls' to answer")
        self.gate = gate
        return {"id": message["id"], "jsonrpc": "2.0", "result": result}

    def _send(self, reply: dict[str, Any]) -> None:
        self.stdout.write(frame(reply))
        self.stdout.flush()
        self.answered += 1
        if self._loader is None and self.workspaces is not None:  # initialize was answered
            self._after_initialize()

    def _notification(self, method: str, params: object, raw: bytes) -> None:
        if method == "initialized" and self.workspaces is not None:
            self.replay.append(raw)
        elif method in EARLY_NOTIFICATIONS and self.workspaces is not None:
            self._call(EARLY_NOTIFICATIONS[method], method, params)
        else:
            raise NotHere(f"{method} is pygls' to handle")

    def _call(self, handler: Handler, method: str, params: object) -> Any:
        assert self.workspaces is not None
        try:
            for memory in self.workspaces.memories.values():
                memory.refresh()  # what other windows did meanwhile (the watcher is not running)
            return call(handler, Memories(self.workspaces), BY_NAME[method], params)
        except Exception as exc:
            raise NotHere(f"{method} failed here: {exc}") from exc

    def _initialize(self, params: object) -> dict[str, Any]:
        """The workspaces and the answer, for params whose parts we read are well formed."""
        if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
            raise NotHere("unusual initialize params")
        folders = params.get("workspaceFolders") or []
        root = params.get("rootUri")
        if not isinstance(folders, list) or not all(_folder(f) for f in folders):
            raise NotHere("unusual workspaceFolders")
        if root is not None and not isinstance(root, str):
            raise NotHere("unusual rootUri")
        process = params.get("processId")
        if process is not None and (not isinstance(process, int) or isinstance(process, bool)):
            raise NotHere("unusual processId")
        workspaces = Workspaces()
        try:
            result = {
                "capabilities": capabilities(params["capabilities"]),
                "serverInfo": {"name": SERVER_NAME, "version": server_version()},
            }
            # settings errors are shown at `initialized`, by the server
            options = params.get("initializationOptions")
            workspaces.initialize([f["uri"] for f in folders], root, options)
        except Exception as exc:
            raise NotHere(f"initialize failed here: {exc}") from exc
        self.workspaces = workspaces
        return result

    def _after_initialize(self) -> None:
        """Open the stores (the first listTopics needs them), then load pygls meanwhile."""
        assert self.workspaces is not None
        try:
            self.workspaces.open_stores()
        except Exception:  # `start` tries again once the server runs
            log.exception("opening the memory stores failed")
        self._loader = threading.Thread(target=self._load, name="load-pygls", daemon=True)
        self._loader.start()

    # -- the hand-over -----------------------------------------------------------------------
    def take_logs(self) -> list[logging.LogRecord]:
        logging.getLogger("topicforest").removeHandler(self.backlog)
        records, self.backlog.records = self.backlog.records, []
        return records

    def unread(self) -> bytes:
        """What pygls must read before the rest of stdin: the replayed frames, then the bytes
        read here but not answered."""
        return b"".join(self.replay) + self.buffer

    def writer(self, stdout: BinaryIO) -> BinaryIO:
        """stdout, minus pygls' answer to the replayed `initialize`."""
        if not self.replay:
            return stdout
        return cast(BinaryIO, DropReply(stdout, REPLAY_ID, self.initialize_result))


def _folder(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("uri"), str)
        and isinstance(value.get("name"), str)
    )


class DropReply:
    """The stdout pygls writes to, minus its reply to request `msg_id`, which is checked against
    the `expected` result (what the client got from `early`): a difference is logged.

    pygls writes one frame per write, and the replayed `initialize` is the first request it
    reads and answers (at once: its handler is synchronous), so only its first reply is checked.
    """

    def __init__(self, out: BinaryIO, msg_id: str, expected: object = None) -> None:
        self.out = out
        self.msg_id: str | None = msg_id
        self.expected = expected

    def write(self, data: bytes) -> int:
        if self.msg_id is not None:
            try:
                message = json.loads(data.partition(b"\r\n\r\n")[2])
            except ValueError:
                message = {"method": None}
            if isinstance(message, dict) and "method" not in message:  # the first reply
                ours, self.msg_id = message.get("id") == self.msg_id, None
                result = message.get("result")
                if not ours or "error" in message:
                    log.error("the language server refused the client's initialize: %s", data)
                elif result != self.expected:
                    log.error("initialize answered early: %s; by pygls: %s", self.expected, result)
                if ours:
                    return len(data)
        return self.out.write(data)

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        self.out.close()


def run_stdio(log_level: int = logging.INFO) -> int:
    """Serve on stdio: early answers (unless TOPICFOREST_EARLY=0), then pygls; returns the
    exit code."""
    stdin, stdout = protect_stdout()  # before anything can print
    setup_stderr_logging(log_level)
    front = Front(stdin, stdout, log_level)
    if os.environ.get(EARLY_ENV, "1") != "0" and os.name == "posix":  # select() on pipes
        front.serve()
    try:
        from topicforest.server import app  # loaded by the front's thread by now, or here

        server = app.create_server(log_level, front.workspaces, front.take_logs())
    except BaseException:
        front.backlog.spill()
        raise
    # pygls re-reads the replayed `initialize`: its reader starts from the state before it
    try:
        return server.serve_stdio(stdin, front.writer(stdout), front.unread(), Gate())
    finally:
        if server.log_bridge:
            server.log_bridge.spill()
