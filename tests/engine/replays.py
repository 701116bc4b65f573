"""Conversations replayed through the engine as the evaluation replays them, with the offline
extractive summarizer (what a user with no summary model gets), remembered per file: several
tests read the same replay."""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.engine.summarize.base import Summarizer, SummaryRequest, SummaryResult
from topicforest.eval.dataset import Conversation, held_out_paths, load_conversation
from topicforest.eval.systems import START, TURN_SECONDS, maintain, thread_of

SAMPLE = Path(str(files("topicforest.data").joinpath("sample_conversation.json")))
HELD_OUT = held_out_paths()  # the project's own samples that nothing is tuned on


class Recording(ExtractiveSummarizer):
    """The offline summarizer, keeping every summary it wrote."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def summarize_now(self, request: SummaryRequest) -> SummaryResult:
        result = super().summarize_now(request)
        self.written.append(result.text)
        return result


@dataclass(frozen=True)
class Replay:
    conv: Conversation
    window: ContextWindow
    summaries: list[str]  # every summary written on the way, in order


@functools.cache
def replay_offline(path: Path, budget: int = 2048) -> Replay:
    conv = load_conversation(path)
    summarizer = Recording()
    window = asyncio.run(_replay(conv, budget, summarizer))
    return Replay(conv, window, summarizer.written)


async def _replay(conv: Conversation, budget: int, summarizer: Summarizer) -> ContextWindow:
    window = ContextWindow(WindowConfig(history_budget=budget))
    for index, m in enumerate(conv.messages):
        thread = thread_of(m)
        now = START + index * TURN_SECONDS
        window.append(thread, m.role, m.content, timestamp=now)
        if m.role == "user":  # a chat turn renders right after storing the question
            window.render(query=m.content, thread_id=thread)
        await maintain(window, summarizer, now=now)
        if m.role == "assistant":  # the user pauses: the idle round summarizes new topics
            await maintain(window, summarizer, idle=True)
    return window


def fact_renders(replay: Replay) -> list[str]:
    """What the model would receive for each fact's question, at the end of the replay."""
    last = thread_of(replay.conv.messages[-1])
    return [
        replay.window.render(query=f.question, thread_id=last).text() for f in replay.conv.facts
    ]
