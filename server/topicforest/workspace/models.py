"""The models a workspace talks to: its chat model (and per-turn overrides) and its summarizers.

litellm is imported lazily and off the event loop (`warm_litellm`): it takes seconds and
~160 MB, and nothing on a turn's path may wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from topicforest.engine.llm import load_litellm
from topicforest.engine.summarize.base import Summarizer, SummaryRequest, SummaryResult
from topicforest.engine.summarize.cascade import CascadeSummarizer
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.workspace.chat_model import ChatModel
from topicforest.workspace.settings import Settings

CHAT_TIMEOUT = 120.0  # seconds for the whole model call
MAX_MODELS = 8  # per-turn model overrides kept open at once


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
    models = [LiteLLMSummarizer(m, api_base=settings.api_base) for m in settings.summary_models]
    return CascadeSummarizer([*models, OffLoopExtractive()], offline_floor=False)


class OffLoopExtractive:
    """The offline summarizer in a worker thread: its CPU work never holds up the event loop
    (a round of big topics would otherwise delay the chat turns and requests arriving meanwhile)."""

    name = ExtractiveSummarizer.name

    def __init__(self) -> None:
        self.inner = ExtractiveSummarizer()

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return await asyncio.to_thread(self.inner.summarize_now, request)


def close_soon(model: ChatModel) -> None:
    """Close a replaced chat model's connections once its running turns have had time to end."""
    with contextlib.suppress(RuntimeError):  # no running loop: it never opened a connection
        asyncio.get_running_loop().call_later(
            CHAT_TIMEOUT, lambda: asyncio.ensure_future(model.close())
        )


_litellm_module: Any = None


async def warm_litellm() -> Any:
    """litellm, imported off the event loop the first time (it takes seconds and ~160 MB)."""
    global _litellm_module
    if _litellm_module is None:
        _litellm_module = await asyncio.to_thread(load_litellm)
    return _litellm_module


def model_window(model: str | None) -> int | None:
    """The chat model's input window, if litellm knows it (call off the event loop)."""
    if not model:
        return None
    from topicforest.engine.llm import max_input_tokens

    return max_input_tokens(model)
