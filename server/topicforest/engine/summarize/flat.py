"""Recursive flat summarization (aider's ChatSummary algorithm).

Used as the window's fallback when the topic render cannot fit, and as the baseline the evaluation
compares against. Keep the newest half of the budget verbatim (split so the head ends on an
assistant message), summarize the head, and recurse up to depth 3 if it still does not fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import Summarizer, SummaryRequest, SummaryResult

MIN_SPLIT = 4
MAX_DEPTH = 3
SUMMARY_PREFIX = "I spoke to you previously about a number of things.\n"


async def summarize_flat(
    messages: Sequence[Message],
    budget: int,
    summarizer: Summarizer,
    count: Callable[[str], int],
    *,
    on_call: Callable[[SummaryRequest, SummaryResult], None] | None = None,
    depth: int = 0,
) -> list[Message]:
    """Return messages (a summary message first, if one was needed) that fit `budget` tokens."""
    sized = [(count(m.content), m) for m in messages]
    total = sum(t for t, _ in sized)
    if total <= budget and depth == 0:
        return list(messages)
    if len(messages) <= MIN_SPLIT or depth > MAX_DEPTH:
        return [await _summarize_all(messages, budget, summarizer, on_call)]

    half = budget // 2
    tail_tokens = 0
    split = len(messages)
    for i in range(len(sized) - 1, -1, -1):
        if tail_tokens + sized[i][0] >= half:
            break
        tail_tokens += sized[i][0]
        split = i
    while split > 1 and messages[split - 1].role != "assistant":  # head ends on an assistant turn
        split -= 1
    if split <= MIN_SPLIT:
        return [await _summarize_all(messages, budget, summarizer, on_call)]

    head, tail = list(messages[:split]), list(messages[split:])
    summary = await _summarize_all(head, budget, summarizer, on_call)
    result = [summary, *tail]
    if count(summary.content) + tail_tokens < budget:
        return result
    return await summarize_flat(result, budget, summarizer, count, on_call=on_call, depth=depth + 1)


async def _summarize_all(
    messages: Sequence[Message],
    budget: int,
    summarizer: Summarizer,
    on_call: Callable[[SummaryRequest, SummaryResult], None] | None,
) -> Message:
    request = SummaryRequest(messages=tuple(messages), target_tokens=max(40, budget // 4))
    result = await summarizer.summarize(request)
    if on_call:
        on_call(request, result)
    first = messages[0]
    text = SUMMARY_PREFIX + result.text
    return Message(
        id=first.id,
        thread_id=first.thread_id,
        role="user",
        content=text,
        timestamp=messages[-1].timestamp,
        tokens=0,
    )
