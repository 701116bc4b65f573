"""The models a workspace talks to: its chat model (and per-turn overrides) and its summarizers.

Everything litellm does runs in the litellm worker process (`llm_worker`): importing it takes
seconds and ~160 MB, and done in this process it held up the turns of the first seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from topicforest.engine.summarize.base import Summarizer, SummaryRequest, SummaryResult
from topicforest.engine.summarize.cascade import CascadeSummarizer
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.workspace.chat_model import WORKER_GRACE, ChatModel
from topicforest.workspace.llm_worker import WORKER, WorkerError
from topicforest.workspace.served_window import served_window
from topicforest.workspace.settings import Settings

log = logging.getLogger(__name__)

CHAT_TIMEOUT = 120.0  # seconds for the whole model call
MAX_MODELS = 8  # per-turn model overrides kept open at once
EXTRACT_SECONDS = 10.0  # the worker's offline summary, before this process makes it instead


class Models:
    """The configured chat model, the turns' overrides, and the summarizer cascade."""

    def __init__(self, settings: Settings, summarizer: Summarizer | None = None) -> None:
        self.settings = settings
        self._fixed_summarizer = summarizer
        self.summarizer: Summarizer = summarizer or cascade(settings)
        self.chat_model = self._chat_model(settings.chat_model)
        self._overrides: dict[str, ChatModel] = {}

    def _chat_model(self, model: str | None) -> ChatModel:
        s = self.settings
        return ChatModel(model or "", s.api_base, CHAT_TIMEOUT, s.chat_first_byte_timeout)

    def for_turn(self, name: str) -> ChatModel:
        """The configured chat model, or a turn's override (same apiBase and key rules)."""
        if name == self.chat_model.model:
            return self.chat_model
        model = self._overrides.pop(name, None) or self._chat_model(name)
        self._overrides[name] = model  # newest last
        while len(self._overrides) > MAX_MODELS:
            close_soon(self._overrides.pop(next(iter(self._overrides))))
        return model

    def configure(self, settings: Settings) -> None:
        self.settings = settings
        if self._fixed_summarizer is None:
            self.summarizer = cascade(settings)
        current = self.chat_model
        wanted = (settings.chat_model or "", settings.api_base, settings.chat_first_byte_timeout)
        if (current.model, current.api_base, current.first_byte_timeout) != wanted:
            close_soon(current)  # a turn still streaming from it keeps its session
            self.chat_model = self._chat_model(settings.chat_model)
            for model in self._overrides.values():
                close_soon(model)
            self._overrides.clear()

    async def close(self) -> None:
        await self.chat_model.close()
        for model in self._overrides.values():
            await model.close()


def cascade(settings: Settings) -> Summarizer:
    models = [WorkerSummarizer(m, settings.api_base) for m in settings.summarizers]
    return CascadeSummarizer([*models, OffLoopExtractive()], offline_floor=False)


class WorkerSummarizer:
    """`LiteLLMSummarizer` run in the litellm worker process (any provider string)."""

    def __init__(self, model: str, api_base: str | None, timeout: float = 60.0) -> None:
        self.name = model
        self.model = model
        self.api_base = api_base
        self.timeout = timeout

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        result = await WORKER.call(
            "summarize", self.model, self.api_base, self.timeout, request,
            seconds=self.timeout + WORKER_GRACE,
        )  # fmt: skip
        assert isinstance(result, SummaryResult)
        return result


class OffLoopExtractive:
    """The offline summarizer, run in the worker process: its CPU work never holds up the event
    loop, nor (as it did in a worker thread) the interpreter lock a chat turn needs. Should the
    worker fail, or not answer within EXTRACT_SECONDS (hung, or busy importing litellm on a
    loaded machine), it runs in a thread here: the floor of the cascade never fails, and
    upkeep never waits on a worker for it."""

    name = ExtractiveSummarizer.name

    def __init__(self) -> None:
        self.inner = ExtractiveSummarizer()

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        try:
            result = await WORKER.call("extract", request, seconds=EXTRACT_SECONDS)
        except WorkerError as exc:
            log.warning("offline summary in this process: %s", exc)
            return await asyncio.to_thread(self.inner.summarize_now, request)
        assert isinstance(result, SummaryResult)
        return result


def close_soon(model: ChatModel) -> None:
    """Close a replaced chat model's connections once its running turns have had time to end."""
    with contextlib.suppress(RuntimeError):  # no running loop: it never opened a connection
        asyncio.get_running_loop().call_later(
            CHAT_TIMEOUT, lambda: asyncio.ensure_future(model.close())
        )


async def model_window(model: str | None, api_base: str | None = None) -> int | None:
    """The chat model's input window: litellm's figure (asked of the worker process, which
    starts, and imports litellm, on the first such question), else what a local server serving
    it reports (Ollama, llama.cpp, LM Studio)."""
    if not model:
        return None
    window = await WORKER.call("window", model)
    if isinstance(window, int):
        return window
    return await served_window(model, api_base)
