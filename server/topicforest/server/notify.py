"""Server → client notifications for memory events: topicsChanged and work-done progress."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from topicforest.server import wire
from topicforest.server.protocol import PREFIX
from topicforest.workspace.events import ProgressStage

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer

log = logging.getLogger(__name__)
TOPICS_CHANGED = PREFIX + "topicsChanged"
CHAT_DELTA = PREFIX + "chatDelta"
THREADS_CHANGED = PREFIX + "threadsChanged"
PROGRESS_TIMEOUT = 5.0  # seconds to wait for window/workDoneProgress/create


class Notifier:
    """A MemoryListener that speaks JSON-RPC."""

    def __init__(self, server: TopicForestServer) -> None:
        self.server = server
        # per memory: the last progress step, so begin/report/end go out in order
        self._steps: dict[str, asyncio.Future[str | None]] = {}

    def topics_changed(self, key: str, reason: str, ids: list[int] | None) -> None:
        params: wire.TopicsChanged = {"workspaceUri": key, "reason": reason}
        if ids is not None:
            params["topicIds"] = ids
        self.server.protocol.notify(TOPICS_CHANGED, params)

    def threads_changed(self, key: str, thread_id: str | None, appended: list[str]) -> None:
        params: wire.ThreadsChanged = {"workspaceUri": key, "threadId": thread_id}
        if appended:
            params["appended"] = appended
        self.server.protocol.notify(THREADS_CHANGED, params)

    def summarizing(self, key: str, stage: ProgressStage, message: str, percentage: int) -> None:
        if not self.server.supports_progress():
            return
        previous = self._steps.get(key)
        step = self._step(previous, stage, message, percentage)
        self._steps[key] = asyncio.ensure_future(step)
        if stage == "end":
            self._steps[key].add_done_callback(lambda _: self._steps.pop(key, None))

    async def _step(
        self,
        previous: asyncio.Future[str | None] | None,
        stage: ProgressStage,
        message: str,
        percentage: int,
    ) -> str | None:
        progress = self.server.work_done_progress
        if stage == "begin":
            token = f"topicforest-summarize-{uuid.uuid4().hex[:12]}"
            try:
                await asyncio.wait_for(progress.create_async(token), PROGRESS_TIMEOUT)
            except Exception as exc:  # a client that refuses progress still gets topicsChanged
                log.debug("no progress token: %s", exc)
                return None
            progress.begin(
                token,
                types.WorkDoneProgressBegin(title="Topic Forest", message=message, percentage=0),
            )
            return token
        started = await previous if previous is not None else None
        if started is None:
            return None
        if stage == "report":
            progress.report(
                started, types.WorkDoneProgressReport(message=message, percentage=percentage)
            )
        else:
            progress.end(started, types.WorkDoneProgressEnd(message=message))
        return started
