"""The language server object: pygls' LanguageServer plus the workspaces and task bookkeeping."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any, BinaryIO

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from topicforest.server.framing import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    BadMessage,
    FrameParser,
    Gate,
    Skipped,
    decode,
    error_reply,
)
from topicforest.server.identity import SERVER_NAME, server_version
from topicforest.server.jsonrpc import raw_converter
from topicforest.server.logbridge import LogBridge
from topicforest.server.notify import Notifier
from topicforest.server.protocol import PROVIDER_ERROR
from topicforest.server.stdio import PipeReader
from topicforest.workspace.registry import Workspaces
from topicforest.workspace.settings import Settings

log = logging.getLogger(__name__)


class Protocol(LanguageServerProtocol):
    """pygls' protocol, minus tracebacks in error responses: pygls puts one (with absolute
    paths) into the `data` of every -32603; the server's log has it instead."""

    def _send_response(
        self, msg_id: Any, result: Any | None = None, error: Any | None = None
    ) -> None:
        if error is not None and error.code == INTERNAL_ERROR:
            kind = str(error.message).split(":", 1)[0].strip()[:80]
            error = attrs.evolve(error, message=f"internal error ({kind}); see the server log")
            error = attrs.evolve(error, data=None)
        super()._send_response(msg_id, result, error)

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """A documented error a handler raised (a refusal: bad params, unknown topic, provider
        failure) is answered and logged in one line, its traceback only at debug level; pygls
        logs each with a traceback (2,671 of them in one fuzz run; ~70 lines per provider
        failure). Anything else, a bug, keeps its traceback in the log."""
        error = None if future.cancelled() else future.exception()
        if not isinstance(error, JsonRpcException):
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        if error.code == PROVIDER_ERROR:  # expected, but the user may want to know: a warning
            log.warning("request %s: %s", msg_id, error.message)
        else:
            log.info("refused request %s: %s (%s)", msg_id, error.message, error.code)
        log.debug("request %s: how it failed", msg_id, exc_info=error)
        self._send_response(msg_id, error=error.to_response_error())

    def send_raw(self, message: dict[str, Any]) -> None:
        """Send a JSON-RPC message built here (an answer to what pygls could not read)."""
        self._send_data(message)

    @property
    def converter(self) -> cattrs.Converter:
        """The converter pygls (un)structures messages with (`jsonrpc.raw_converter`)."""
        return self._converter


class TopicForestServer(LanguageServer):
    protocol: Protocol  # pygls makes it from `protocol_cls`

    def __init__(self, workspaces: Workspaces | None = None) -> None:
        super().__init__(
            SERVER_NAME,
            server_version(),
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            converter_factory=raw_converter,
            protocol_cls=Protocol,
        )
        self.notifier = Notifier(self)
        self.workspaces = workspaces if workspaces is not None else Workspaces()
        self.workspaces.attach(self.notifier)
        self.tasks: set[asyncio.Task[Any]] = set()  # strong references to background work
        self.pending_messages: list[str] = []  # settings errors found before `initialized`
        self.log_bridge: LogBridge | None = None

    def serve_stdio(
        self, stdin: BinaryIO, stdout: BinaryIO, head: bytes = b"", gate: Gate | None = None
    ) -> int:
        """pygls' stdio service (`start_io`) with our reader: stdin read in the event loop
        (`PipeReader`), `head` (bytes already taken from stdin) first, framing faults skipped
        (`framing`), and `gate` (the lifecycle state `early` reached) applied. Returns the exit
        code (LSP: 0 after `shutdown`, else 1)."""
        self._stop_event = stop = threading.Event()  # pygls' `exit` handler sets it
        self.protocol.set_writer(StdoutWriter(stdout))
        code = 0
        try:
            asyncio.run(self._read_stdin(PipeReader(stdin), head, gate or Gate(), stop))
        except BrokenPipeError:
            log.error("the client closed the connection; shutting down")
        except SystemExit as exc:  # pygls' `exit` handler
            code = exc.code if isinstance(exc.code, int) else 1
        except KeyboardInterrupt:
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]
        return code

    async def _read_stdin(
        self, reader: PipeReader, head: bytes, gate: Gate, stop: threading.Event
    ) -> None:
        parser = FrameParser(head)
        while not stop.is_set():
            item = parser.next()
            if item is None:
                data = await reader.read()
                if not data:
                    item = parser.close()
                    if item is not None:
                        log.warning("%s", item.describe())
                    return
                parser.feed(data)
            elif isinstance(item, Skipped):
                log.warning("%s", item.describe())
            else:
                self.dispatch(item.body, gate)

    def dispatch(self, body: bytes, gate: Gate) -> None:
        """Hand one frame's message to pygls, or answer it here if pygls cannot serve it."""
        protocol = self.protocol
        try:
            message = decode(body)
            if not gate.check(message):
                log.warning("ignored %s: the server is not serving it now", message["method"])
                return
            method = message.get("method")
            if "id" in message and method is not None and not self._serves(method):
                raise BadMessage(METHOD_NOT_FOUND, f"no method {method[:200]!r}", message["id"])
            structured = protocol.structure_message(message)
        except BadMessage as exc:
            log.warning("refused a message: %s", exc)
            protocol.send_raw(exc.reply)
            return
        except JsonRpcException as exc:  # pygls could not read the params
            log.warning("could not read %s: %s", message.get("method"), exc)
            if "id" in message and message.get("method") is not None:
                reply = error_reply(message["id"], exc.code, exc.message or "invalid params")
                protocol.send_raw(reply)
            return
        try:
            protocol.handle_message(structured)
        except Exception:  # pygls answers requests' errors itself; this is a bug of ours
            log.exception("could not handle %s", method)

    def _serves(self, method: str) -> bool:
        """Whether a request to `method` has a handler (pygls gives an LSP method it has no
        handler for, such as textDocument/hover, no answer at all when its params are odd)."""
        features = self.protocol.fm
        return method in features.features or method in features.builtin_features

    def log_bridge_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.log_bridge is not None:
            self.log_bridge.attach(loop)

    @property
    def settings(self) -> Settings:
        return self.workspaces.settings

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run `coro` in the background; its exception (if any) is logged, never lost."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def supports_progress(self) -> bool:
        # unset if pygls could not read the initialize `early` answered (docs/architecture.md)
        capabilities = getattr(self.protocol, "client_capabilities", None)
        window = capabilities.window if capabilities is not None else None
        return bool(window and window.work_done_progress)
