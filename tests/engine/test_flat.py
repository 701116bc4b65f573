"""aider's recursive flat summarization, the fallback and the evaluation baseline."""

from __future__ import annotations

from topicforest.engine import ContextWindow
from topicforest.engine.summarize import ExtractiveSummarizer, SummaryRequest, SummaryResult
from topicforest.engine.summarize.flat import SUMMARY_PREFIX, summarize_flat
from topicforest.engine.tokens import estimate_tokens


def conversation(n: int) -> ContextWindow:
    window = ContextWindow()
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        window.append("t", role, f"message {i} about data/loader.py build_loader batch {i} " * 6)
    return window


async def test_fits_budget_keeps_newest_verbatim_and_head_ends_on_assistant() -> None:
    window = conversation(40)
    messages = window.log.get_many(range(1, 41))
    calls: list[SummaryRequest] = []

    def record(request: SummaryRequest, result: SummaryResult) -> None:
        calls.append(request)

    out = await summarize_flat(
        messages, 600, ExtractiveSummarizer(), estimate_tokens, on_call=record
    )
    assert out[0].content.startswith(SUMMARY_PREFIX)
    assert sum(estimate_tokens(m.content) for m in out) <= 600
    assert out[-1] == messages[-1]  # the newest message is kept verbatim
    assert calls and calls[0].messages[-1].role == "assistant"
    assert out[1].role == "user"  # the verbatim tail starts at a user turn


async def test_small_history_is_returned_unchanged() -> None:
    messages = conversation(4).log.get_many(range(1, 5))
    assert (
        await summarize_flat(messages, 10_000, ExtractiveSummarizer(), estimate_tokens) == messages
    )


async def test_recursion_is_bounded_even_with_a_verbose_summarizer() -> None:
    class Verbose:
        name = "verbose"

        async def summarize(self, request: SummaryRequest) -> SummaryResult:
            return SummaryResult("I asked you " + "blah " * 400, self.name)

    messages = conversation(60).log.get_many(range(1, 61))
    out = await summarize_flat(messages, 300, Verbose(), estimate_tokens)
    assert out and out[0].content.startswith(SUMMARY_PREFIX)
