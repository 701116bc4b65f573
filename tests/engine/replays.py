"""Conversations replayed through the engine as the evaluation replays them, with the offline
extractive summarizer (what a user with no summary model gets), remembered per file: several
tests read the same replay."""

from __future__ import annotations

import asyncio
import functools
from importlib.resources import files
from pathlib import Path

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.eval.dataset import Conversation, load_conversation
from topicforest.eval.systems import START, TURN_SECONDS, maintain, thread_of

SAMPLE = Path(str(files("topicforest.data").joinpath("sample_conversation.json")))


@functools.cache
def replay_offline(path: Path, budget: int = 2048) -> tuple[Conversation, ContextWindow]:
    conv = load_conversation(path)
    return conv, asyncio.run(_replay(conv, budget))


async def _replay(conv: Conversation, budget: int) -> ContextWindow:
    summarizer = ExtractiveSummarizer()
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


def fact_renders(conv: Conversation, window: ContextWindow) -> list[str]:
    """What the model would receive for each fact's question, at the end of the replay."""
    last = thread_of(conv.messages[-1])
    return [window.render(query=f.question, thread_id=last).text() for f in conv.facts]
