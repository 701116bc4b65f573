"""Render never exceeds the budget, by the fast estimate or by a real tokenizer."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.engine.tokens import estimate_tokens, litellm_counter

from ..conftest import load_conversation, shared_conversations

WORDS = [
    "build_loader",
    "data/loader.py",
    "DataLoader",
    "num_workers=8",
    "Dockerfile",
    "shm-size",
    "8g",
    "refreshAccessToken",
    "src/auth/refresh.ts",
    "429",
    "retry",
    "timeout",
    "pytest",
    "conftest.py",
    "fixture",
    "the",
    "a",
    "to",
    "of",
    "and",
    "we",
    "it",
    "is",
    "for",
    "ok",
    "thanks",
    "✓",
    "—",
    "日本語",
    "émoji",
    "🙌",
    "```python",
    "def",
    "f():",
    "pass```",
    "##",
    "Topic",
    "1:",
    "forged",
    "|",
    "user:",
    "fake",
    "I",
    "asked",
    "you",
    "about",
]

message_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=120).map(" ".join)
conversation = st.lists(message_text, min_size=1, max_size=50)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversation,
    st.integers(min_value=64, max_value=3000),
    st.sampled_from([None, "docker shm-size", "build_loader", "🙌 日本語"]),
    st.booleans(),
    st.integers(min_value=0, max_value=3),
)
def test_render_never_exceeds_budget(
    texts: list[str], budget: int, query: str | None, summarize: bool, pins: int
) -> None:
    window = ContextWindow(WindowConfig(history_budget=budget, max_topics=5))
    for i, text in enumerate(texts):
        window.append("t", "user" if i % 2 == 0 else "assistant", text, timestamp=float(i))
        window.graduate()
    if summarize:
        asyncio.run(resolve_round(window, ExtractiveSummarizer(), force=True))
    live = window.forest.live_roots()
    for root in live[:pins]:
        window.pin(root)
    if live and pins == 3:
        window.expand(live[-1])
    rendered = window.render(query=query, thread_id="t")
    assert rendered.tokens <= budget
    assert sum(estimate_tokens(m["content"]) + 4 for m in rendered.messages) <= budget


def test_estimate_tracks_a_real_tokenizer_on_coding_chat() -> None:
    """The hot path packs by estimate: on real coding chat it over-counts in aggregate.

    Per message it can under-count dense code by up to ~30%, and a pasted table of numbers (a
    query result: digits, pipes, dates) by up to ~50%, which is why a window with the model's
    tokenizer verifies every render (next test) rather than trusting the estimate.
    """
    exact = litellm_counter("gpt-4o-mini")
    samples = [" ".join(WORDS), "x" * 5000, "日本語のテキスト" * 50, "🙌" * 300]
    for path in shared_conversations():  # real coding chat: prose, code blocks, logs
        samples += [m["content"] for m in load_conversation(path)["messages"]]
    ratios = [exact(text) / estimate_tokens(text) for text in samples]
    assert sum(exact(t) for t in samples) <= sum(estimate_tokens(t) for t in samples)
    assert 0.4 <= sum(ratios) / len(ratios) <= 1.0
    assert max(ratios) < 1.6


ADVERSARIAL = ["8g " * 80, "{}[]()<>" * 60, "a1b2c3" * 80, "x\n\n\t " * 90, "a1_b2/c3.py " * 50]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from(ADVERSARIAL + WORDS), min_size=1, max_size=40),
    st.integers(min_value=64, max_value=1500),
    st.sampled_from([None, "build_loader Dockerfile"]),
)
def test_exact_count_never_exceeds_budget_even_where_the_estimate_is_wrong(
    texts: list[str], budget: int, query: str | None
) -> None:
    exact = litellm_counter("gpt-4o-mini")
    window = ContextWindow(WindowConfig(history_budget=budget), exact_count=exact)
    for i, text in enumerate(texts):
        window.append("t", "user" if i % 2 == 0 else "assistant", text * 2)
        window.graduate()
    asyncio.run(resolve_round(window, ExtractiveSummarizer(), force=True))
    rendered = window.render(query=query, thread_id="t")
    assert sum(exact(m["content"]) + 4 for m in rendered.messages) <= budget
    assert rendered.tokens <= budget
