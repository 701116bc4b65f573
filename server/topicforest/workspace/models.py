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
from topicforest.workspace.errors import ChatNotConfigured
from topicforest.workspace.keys import NO_KEYS, ApiKeys
from topicforest.workspace.llm_worker import WORKER, WorkerError
from topicforest.workspace.model_check import ModelCheck, check_model
from topicforest.workspace.served_window import served_window
from topicforest.workspace.settings import Settings

log = logging.getLogger(__name__)

CHAT_TIMEOUT = 120.0  # seconds for the whole model call
MAX_MODELS = 8  # per-turn model overrides kept open at once
EXTRACT_SECONDS = 10.0  # the worker's offline summary, before this process makes it instead
TEST_TIMEOUT = 60.0  # seconds for a model test's whole call (its first byte: as for chat)


class Models:
    """The configured chat model, the turns' overrides, and the summarizer cascade."""

    def __init__(
        self, settings: Settings, summarizer: Summarizer | None = None, keys: ApiKeys = NO_KEYS
    ) -> None:
        self.settings = settings
        self.keys = keys
        self._fixed_summarizer = summarizer
        self.summarizer: Summarizer = summarizer or cascade(settings, keys)
        self.chat_model = self._chat_model(settings.chat_model)
        self._overrides: dict[str, ChatModel] = {}

    def _chat_model(
        self, model: str | None, api_base: str | None = None, timeout: float = CHAT_TIMEOUT
    ) -> ChatModel:
        s = self.settings
        base = s.api_base_for(model or "") if api_base is None else api_base or None
        return ChatModel(model or "", base, timeout, s.chat_first_byte_timeout, self.keys)

    def for_turn(self, name: str) -> ChatModel:
        """The configured chat model, or a turn's override (its own endpoint if `models` gives
        it one, else apiBase; the same key rules)."""
        if name == self.chat_model.model:
            return self.chat_model
        model = self._overrides.pop(name, None) or self._chat_model(name)
        self._overrides[name] = model  # newest last
        while len(self._overrides) > MAX_MODELS:
            close_soon(self._overrides.pop(next(iter(self._overrides))))
        return model

    def configure(self, settings: Settings, keys: ApiKeys | None = None) -> None:
        """New settings, or new keys: the chat models are made again if what they reach, or
        how, changed (their routes carry keys)."""
        before = self._reach()
        self.settings, self.keys = settings, self.keys if keys is None else keys
        if self._fixed_summarizer is None:
            self.summarizer = cascade(settings, self.keys)
        if self._reach() != before:
            close_soon(self.chat_model)  # a turn still streaming from it keeps its session
            self.chat_model = self._chat_model(settings.chat_model)
            for model in self._overrides.values():
                close_soon(model)
            self._overrides.clear()

    def _reach(self) -> tuple[object, ...]:
        s = self.settings
        return (s.chat_model, s.api_base, s.models, s.chat_first_byte_timeout, self.keys)

    async def test(self, model: str | None, api_base: str | None = None) -> ModelCheck:
        """Send `model` (default: the chat model) one tiny request; what went wrong, in plain
        words. `api_base` None: the endpoint the settings give it; "": the provider's own."""
        name = model or self.settings.chat_model
        if not name:
            raise ChatNotConfigured()
        probe = self._chat_model(name, api_base, TEST_TIMEOUT)
        try:
            return await check_model(probe)
        finally:
            await probe.close()

    async def close(self) -> None:
        await self.chat_model.close()
        for model in self._overrides.values():
            await model.close()


def cascade(settings: Settings, keys: ApiKeys = NO_KEYS) -> Summarizer:
    models = [
        WorkerSummarizer(m, settings.api_base_for(m), keys=keys) for m in settings.summarizers
    ]
    return CascadeSummarizer([*models, OffLoopExtractive()], offline_floor=False)


class WorkerSummarizer:
    """`LiteLLMSummarizer` run in the litellm worker process (any provider string)."""

    def __init__(
        self, model: str, api_base: str | None, timeout: float = 60.0, keys: ApiKeys = NO_KEYS
    ) -> None:
        self.name = model
        self.model = model
        self.api_base = api_base
        self.timeout = timeout
        self.keys = keys

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        result = await WORKER.call(
            "summarize", self.model, self.api_base, self.timeout, request, self.keys,
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
