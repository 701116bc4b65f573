"""The three systems under test, replayed on one conversation with one budget and summarizer.

- Topic Forest: the engine's ContextWindow; after every append, maintenance as WorkspaceMemory
  does it (graduate, then resolver rounds until no topic is dirty); every user turn renders with
  the message as query, as a chat turn does. At the end: render with no query and with each
  fact's question as the query.
- Flat: aider's ChatSummary loop with the engine's `summarize_flat`: after each exchange, if the
  done messages exceed the budget, replace them by summary + newest half.
- Truncation: the newest messages that fit the budget.

Threads: a message with a `thread` is appended to its own chat thread of the window (in index
order), and each user turn renders for its own thread. The final renders (no query, and one per
fact) are for the thread of the conversation's LAST message: the thread the user is in when the
facts are asked about; other threads' hot zones are not part of it (as in the product, where a
thread sees its own hot zone and the shared forest). Flat and truncation keep one history of all
messages in index order: aider and plain truncation have no notion of threads.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from topicforest.engine.config import WindowConfig
from topicforest.engine.hot_zone import MESSAGE_OVERHEAD
from topicforest.engine.messages import Message
from topicforest.engine.render import RenderedContext
from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize.base import Summarizer, SummaryRequest, SummaryResult
from topicforest.engine.summarize.flat import summarize_flat
from topicforest.engine.tokens import TokenCounter, estimate_tokens
from topicforest.engine.window import ContextWindow
from topicforest.eval.dataset import Conversation, LabelledMessage
from topicforest.store.binding import IDLE_FLUSH_SECONDS

THREAD = "eval"
START = 1_700_000_000.0
TURN_SECONDS = 60.0
MAX_ROUNDS = 20  # as WorkspaceMemory: summary rounds per maintenance wake-up


@dataclass
class Cost:
    calls: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Cost) -> None:
        self.calls += other.calls
        self.failed += other.failed
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens


class CountingSummarizer:
    """Wraps the shared summarizer and counts what each system spends (usage as reported)."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.cost = Cost()
        self.durations: list[float] = []

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        started = time.perf_counter()
        try:
            result = await self.inner.summarize(request)
        except Exception:
            self.cost.failed += 1
            raise
        self.durations.append(time.perf_counter() - started)
        self.cost.calls += 1
        self.cost.input_tokens += result.input_tokens
        self.cost.output_tokens += result.output_tokens
        return result


@dataclass
class TopicSpend:
    id: int
    title: str
    messages: int
    calls: int
    input_tokens: int
    output_tokens: int


@dataclass
class FactTrace:
    """Where a fact's message was at the end, for diagnosing the engine."""

    topic: int | None  # its topic (None: still in a hot zone)
    hot: bool  # in a hot zone: the final render's thread's own, or another thread's
    mode_no_query: str  # how that topic rendered: a render mode, "omitted" or "hot"
    mode_query: str
    message_shown_query: bool  # the fact's own message among the originals shown (query)


@dataclass
class ForestRun:
    context_no_query: str
    context_by_fact: dict[str, str]
    traces: dict[str, FactTrace]
    clusters: list[int]  # topic of each message, by conversation index (after a final flush)
    cost: Cost
    topics: list[TopicSpend]
    max_render_tokens: int
    fallback_renders: int


@dataclass
class BaselineRun:
    context: str
    cost: Cost = field(default_factory=Cost)


def thread_of(message: LabelledMessage) -> str:
    """The window thread a conversation message is replayed into."""
    return message.thread or THREAD


def _message(conv: Conversation, index: int, count: TokenCounter) -> Message:
    m = conv.messages[index]
    return Message(
        id=index + 1,
        thread_id=THREAD,
        role="user" if m.role == "user" else "assistant",
        content=m.content,
        timestamp=START + index * TURN_SECONDS,
        tokens=count(m.content),
    )


async def maintain(
    window: ContextWindow, summarizer: Summarizer, *, idle: bool = False, now: float | None = None
) -> None:
    """WorkspaceMemory.maintain without the notifications: graduate, then summarize the topics
    that are due (`idle`: as after the memory's idle time). `now`: the replay's clock, for the
    store's upkeep that flushes a thread quiet for IDLE_FLUSH_SECONDS into the forest."""
    if now is not None:
        window.flush_idle(now, IDLE_FLUSH_SECONDS)
    window.graduate()
    # Upkeep re-clusters in slices between turns; a round finishes well within the seconds a
    # turn takes, so the replay runs each one to its end (also keeps the replay deterministic).
    window.refine(budget_seconds=math.inf)
    for _ in range(MAX_ROUNDS):
        report = await resolve_round(window, summarizer, idle=idle)
        attempted = report.applied + report.stale + report.failed
        if attempted == 0 or (report.applied == 0 and report.failed):
            break
    window.prepare_key_lines(budget_seconds=math.inf)


def settle(window: ContextWindow, max_slices: int = 200) -> None:
    """Re-cluster until nothing is left to do, as upkeep does while the user is away."""
    window.refine(budget_seconds=math.inf, settle=True)
    for _ in range(max_slices):
        if not window.refine_pending:
            return
        window.refine(budget_seconds=math.inf)


async def run_topic_forest(
    conv: Conversation,
    summarizer: Summarizer,
    budget: int,
    count: TokenCounter = estimate_tokens,
    config: WindowConfig | None = None,
    idle_after_reply: bool = False,
) -> ForestRun:
    """Replay `conv`; the engine's default configuration at `budget` unless `config` is given.

    `idle_after_reply`: the user pauses longer than the memory's idle time after each reply, so
    the memory's idle round runs then (WorkspaceMemory: first summaries for new topics)."""
    counting = CountingSummarizer(summarizer)
    window = ContextWindow(config or WindowConfig(history_budget=budget), count=count)
    ids: list[int] = []
    max_tokens = 0
    fallbacks = 0
    for index, m in enumerate(conv.messages):
        thread = thread_of(m)
        message = window.append(thread, m.role, m.content, timestamp=START + index * TURN_SECONDS)
        ids.append(message.id)
        if m.role == "user":  # a chat turn renders right after storing the question
            rendered = window.render(query=m.content, thread_id=thread)
            max_tokens = max(max_tokens, rendered.tokens)
            fallbacks += rendered.fallback
        await maintain(window, counting, now=START + index * TURN_SECONDS)
        if idle_after_reply and m.role == "assistant":
            await maintain(window, counting, idle=True)

    last = thread_of(conv.messages[-1])  # the final renders are for the last message's thread
    final = window.render(thread_id=last)
    by_fact = {}
    traces = {}
    for fact in conv.facts:
        rendered = window.render(query=fact.question, thread_id=last)
        by_fact[fact.id] = rendered.text()
        max_tokens = max(max_tokens, rendered.tokens)
        traces[fact.id] = _trace(window, last, ids[fact.msg_index], final, rendered)
    topics = [
        TopicSpend(
            t.id,
            t.title,
            t.message_count,
            t.spend.calls,
            t.spend.input_tokens,
            t.spend.output_tokens,
        )
        for t in window.topics()
        if not t.dropped
    ]
    # Cluster quality is judged on every message: an idle thread flushes its hot zone anyway.
    for thread in window.threads():
        window.flush_thread(thread)
    settle(window)
    clusters = [window.forest.find(i) for i in ids]
    return ForestRun(
        context_no_query=final.text(),
        context_by_fact=by_fact,
        traces=traces,
        clusters=clusters,
        cost=counting.cost,
        topics=topics,
        max_render_tokens=max(max_tokens, final.tokens),
        fallback_renders=fallbacks,
    )


def _trace(
    window: ContextWindow,
    thread: str,
    message_id: int,
    plain: RenderedContext,
    query: RenderedContext,
) -> FactTrace:
    hot = message_id in {m.id for m in window.hot_messages(thread)}
    other_hot = not hot and any(
        message_id in {m.id for m in window.hot_messages(t)} for t in window.threads()
    )
    topic = None if hot or other_hot else window.forest.find(message_id)

    def mode(rendered: RenderedContext) -> str:
        if other_hot:
            return "another thread's hot zone"
        if hot:
            return "hot" if message_id in rendered.hot_message_ids else "hot, cut"
        shown = next((t for t in rendered.topics if t.id == topic), None)
        return shown.mode if shown else "omitted"

    shown = next((t for t in query.topics if t.id == topic), None)
    return FactTrace(
        topic=topic,
        hot=hot or other_hot,
        mode_no_query=mode(plain),
        mode_query=mode(query),
        message_shown_query=hot or bool(shown and message_id in shown.message_ids),
    )


def too_big(messages: list[Message], budget: int, count: TokenCounter) -> bool:
    """aider's ChatSummary.too_big."""
    return sum(count(m.content) for m in messages) > budget


async def run_flat(
    conv: Conversation, summarizer: Summarizer, budget: int, count: TokenCounter = estimate_tokens
) -> BaselineRun:
    counting = CountingSummarizer(summarizer)
    done: list[Message] = []
    for index in range(len(conv.messages)):
        done.append(_message(conv, index, count))
        end_of_exchange = conv.messages[index].role == "assistant"
        last = index == len(conv.messages) - 1
        if (end_of_exchange or last) and too_big(done, budget, count):
            done = await summarize_flat(done, budget, counting, count)
    return BaselineRun("\n\n".join(m.content for m in done), counting.cost)


def run_truncation(
    conv: Conversation, budget: int, count: TokenCounter = estimate_tokens
) -> BaselineRun:
    kept: list[str] = []
    used = 0
    for m in reversed(conv.messages):
        cost = count(m.content) + MESSAGE_OVERHEAD
        if used + cost > budget:
            break
        kept.append(m.content)
        used += cost
    return BaselineRun("\n\n".join(reversed(kept)))
