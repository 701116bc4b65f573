"""Waiting: what memory management adds to each chat turn's critical path, in real time.

Both systems run against two loopback stubs through real litellm: a chat model (replies are the
conversation's own assistant messages, scripted) and a summarizer with latency. Time is scaled
down (by default 1/10: summaries take 100–300 ms standing for 1–3 s, the chat call 200 ms for 2 s),
the user answers at once (think time 0, the worst case for waiting), and each turn's critical
path is measured with the wall clock from receiving the message to starting the model call.

- Topic Forest: the product's own `WorkspaceMemory.chat` with its background maintenance task;
  each exchange in its own chat thread when the conversation has threads.
- Flat (aider style): after each reply, if the history is too big, summarizing starts in the
  background; the next turn first waits for it (aider's summarize_end), then renders.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topicforest.engine.config import WindowConfig
from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import Summarizer
from topicforest.engine.summarize.flat import summarize_flat
from topicforest.engine.tokens import estimate_tokens
from topicforest.engine.window import ContextWindow
from topicforest.eval.dataset import Conversation
from topicforest.eval.systems import THREAD, CountingSummarizer, thread_of, too_big
from topicforest.workspace.chat_model import ChatModel

CHAT_MODEL = "openai/stub-chat"


@dataclass
class WaitTrace:
    """Per user turn: seconds from receiving the message to starting the model call."""

    turns: list[float] = field(default_factory=list)
    summary_calls: int = 0
    summary_seconds: list[float] = field(default_factory=list)  # each call's own duration


@dataclass(frozen=True)
class ChatStub:
    base_url: str
    script: Callable[[str], None]  # queue the next reply


async def _chat(chat: ChatStub, messages: list[dict[str, str]], reply: str) -> str:
    """One streamed chat call, the way the server makes it."""
    chat.script(reply)
    model = ChatModel(CHAT_MODEL, chat.base_url, timeout=60)
    try:
        return "".join([delta async for delta, _ in model.stream(messages) if delta])
    finally:
        await model.close()


@dataclass
class Exchange:
    thread: str
    question: str
    answer: str | None = None


def _exchanges(conv: Conversation) -> list[Exchange]:
    """User turns in index order, each with the next assistant reply in its own thread."""
    exchanges: list[Exchange] = []
    open_by_thread: dict[str, Exchange] = {}
    for m in conv.messages:
        thread = thread_of(m)
        if m.role == "user":
            exchange = Exchange(thread, m.content)
            exchanges.append(exchange)
            open_by_thread[thread] = exchange
        elif thread in open_by_thread:
            open_by_thread.pop(thread).answer = m.content
    return exchanges


async def wait_topic_forest(
    conv: Conversation, chat: ChatStub, summarizer: Summarizer, budget: int, think: float = 0.0
) -> WaitTrace:
    from topicforest.workspace.memory import WorkspaceMemory
    from topicforest.workspace.settings import Settings

    counting = CountingSummarizer(summarizer)
    settings = Settings(chat_model=CHAT_MODEL, api_base=chat.base_url, history_budget=budget)
    memory = WorkspaceMemory(
        "eval",
        settings,
        window=ContextWindow(WindowConfig(history_budget=budget)),
        summarizer=counting,
    )
    memory.start()
    try:
        for turn, exchange in enumerate(_exchanges(conv)):
            chat.script(exchange.answer or "ok")
            await memory.chat(exchange.thread, f"t{turn}", exchange.question)
            await asyncio.sleep(think)
        turns = list(memory.critical_path)
    finally:
        await memory.close()
    return WaitTrace(turns, counting.cost.calls, counting.durations)


async def wait_flat(
    conv: Conversation, chat: ChatStub, summarizer: Summarizer, budget: int, think: float = 0.0
) -> WaitTrace:
    counting = CountingSummarizer(summarizer)
    trace = WaitTrace()
    done: list[Message] = []
    pending: asyncio.Task[list[Message]] | None = None
    next_id = 1

    def message(role: str, text: str) -> Message:
        nonlocal next_id
        next_id += 1
        return Message(next_id, THREAD, "user" if role == "user" else "assistant", text, 0.0, 0)

    for exchange in _exchanges(conv):  # one flat history, as aider keeps
        question, answer = exchange.question, exchange.answer
        received = time.perf_counter()
        if pending is not None:  # aider: summarize_end() joins the running summary first
            done = await pending
            pending = None
        user = message("user", question)
        context: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in done]
        context.append({"role": "user", "content": question})
        trace.turns.append(time.perf_counter() - received)
        reply = await _chat(chat, context, answer or "ok")
        done += [user, message("assistant", reply)]
        if too_big(done, budget, estimate_tokens):  # aider: summarize_start() in a thread
            snapshot = list(done)
            pending = asyncio.create_task(
                summarize_flat(snapshot, budget, counting, estimate_tokens)
            )
        await asyncio.sleep(think)
    if pending is not None:
        await pending
    trace.summary_calls = counting.cost.calls
    trace.summary_seconds = counting.durations
    return trace
