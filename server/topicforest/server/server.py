"""The language server object: pygls' LanguageServer plus the workspaces and task bookkeeping."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer

from topicforest.server.config import Settings
from topicforest.server.early import SERVER_NAME, server_version
from topicforest.server.jsonrpc import raw_converter
from topicforest.server.logbridge import LogBridge
from topicforest.server.notify import Notifier
from topicforest.server.stdio import PipeReader
from topicforest.server.workspaces import Workspaces

log = logging.getLogger(__name__)


class TopicForestServer(LanguageServer):
    def __init__(self, workspaces: Workspaces | None = None) -> None:
        super().__init__(
            SERVER_NAME,
            server_version(),
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            converter_factory=raw_converter,
        )
        self.notifier = Notifier(self)
        self.workspaces = workspaces if workspaces is not None else Workspaces()
        self.workspaces.attach(self.notifier)
        self.tasks: set[asyncio.Task[Any]] = set()  # strong references to background work
        self.pending_messages: list[str] = []  # settings errors found before `initialized`
        self.log_bridge: LogBridge | None = None

    def serve_stdio(self, stdin: BinaryIO, stdout: BinaryIO, head: bytes = b"") -> None:
        """pygls' stdio loop (`start_io`), with stdin read in the event loop (`PipeReader`) and
        `head` (bytes already taken from stdin) read first."""
        self._stop_event = threading.Event()  # pygls' `exit` handler sets it
        self.protocol.set_writer(StdoutWriter(stdout))
        try:
            asyncio.run(
                run_async(
                    stop_event=self._stop_event,
                    reader=PipeReader(stdin, head),
                    protocol=self.protocol,
                    logger=log,
                    error_handler=self.report_server_error,
                )
            )
        except BrokenPipeError:
            log.error("the client closed the connection; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]

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
