"""Summaries: stale results discarded, the cascade falls back, nothing crashes."""

from __future__ import annotations

import asyncio
import socket

import pytest

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.resolver import resolve_all, resolve_round
from topicforest.engine.summarize import (
    CascadeSummarizer,
    ExtractiveSummarizer,
    SummarizationFailed,
    SummaryRequest,
    SummaryResult,
)
from topicforest.engine.summarize.extractive import Digest
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.testing.stub_llm import StubLLM

from .helpers import filled_window


class Failing:
    name = "always-fails"

    def __init__(self) -> None:
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        raise RuntimeError("provider exploded")


@pytest.fixture
def stub_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub-not-a-secret")


async def test_stale_summary_is_discarded_and_topic_stays_dirty() -> None:
    window = filled_window(budget=512)
    jobs = window.summary_jobs(force=True)
    assert jobs
    job = jobs[0]
    result = await ExtractiveSummarizer().summarize(job.request)
    # the topic changes while "the model" works: a new exchange joins it
    topic_words = job.request.messages[0].content
    window.append("main", "user", topic_words)
    window.append("main", "assistant", topic_words)
    window.flush_thread("main")
    if window.forest.is_root(job.topic_id) and window.forest.version(job.topic_id) == job.version:
        pytest.fail("the test did not manage to change the topic")
    assert window.apply_summary(job, result) is False
    assert job.topic_id not in window.summaries or window.is_dirty(job.topic_id)


async def test_summary_for_a_merged_away_topic_is_discarded() -> None:
    window = filled_window(budget=512)
    job = window.summary_jobs(force=True)[0]
    other = next(r for r in window.forest.live_roots() if r != job.topic_id)
    survivor = window._union(job.topic_id, other)
    result = await ExtractiveSummarizer().summarize(job.request)
    assert window.apply_summary(job, result) is False
    assert window.is_dirty(survivor)


async def test_fresh_summary_is_applied_and_round_cleans_all_topics() -> None:
    window = filled_window(budget=512)
    applied = await resolve_all(window, ExtractiveSummarizer())
    assert applied >= len(window.forest.live_roots())
    assert window.dirty_topic_ids() == []
    for view in window.topics():
        assert view.summary and not view.pending
        assert view.spend.calls >= 1 and view.spend.input_tokens > 0


async def test_cascade_falls_back_to_the_next_model_then_offline(stub_env: None) -> None:
    async with StubLLM() as stub:
        first = LiteLLMSummarizer("openai/first", api_base=stub.base_url, timeout=120)
        second = LiteLLMSummarizer("openai/second", api_base=stub.base_url, timeout=120)
        cascade = CascadeSummarizer([first, second])
        window = filled_window(budget=512)
        request = window.summary_jobs(force=True)[0].request

        stub.fail("status", status=429)
        result = await cascade.summarize(request)
        assert result.model == "openai/second"

        stub.fail("status", status=500, times=2)
        result = await cascade.summarize(request)
        assert result.model == "offline-extractive"
        assert result.text.startswith("I asked you")

        stub.fail("malformed")
        stub.fail("status", status=503)
        result = await cascade.summarize(request)
        assert result.model == "offline-extractive"


async def test_unreachable_provider_falls_back_offline(stub_env: None) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cascade = CascadeSummarizer(
        [LiteLLMSummarizer("openai/gone", api_base=f"http://127.0.0.1:{port}/v1", timeout=3)]
    )
    window = filled_window(budget=512)
    await resolve_all(window, cascade)
    assert window.dirty_topic_ids() == []
    assert all(window.summaries[r].model == "offline-extractive" for r in window.summaries)


async def test_cascade_without_floor_raises_a_clear_error_and_resolver_survives() -> None:
    failing = Failing()
    cascade = CascadeSummarizer([failing], offline_floor=False)
    with pytest.raises(SummarizationFailed, match="provider exploded"):
        await cascade.summarize(SummaryRequest(messages=()))
    window = filled_window(budget=512)
    dirty = window.dirty_topic_ids()
    report = await resolve_round(window, cascade, force=True)
    assert report.failed == len(dirty) and report.applied == 0
    assert window.dirty_topic_ids() == dirty  # nothing lost, still waiting for a summary
    assert window.render(thread_id="main").tokens <= 512  # render still works from raw members


async def test_slow_summary_does_not_block_render() -> None:
    class Slow:
        name = "slow"

        async def summarize(self, request: SummaryRequest) -> SummaryResult:
            await asyncio.sleep(0.5)
            return await ExtractiveSummarizer().summarize(request)

    window = filled_window(budget=512)
    task = asyncio.create_task(resolve_round(window, Slow(), force=True))
    await asyncio.sleep(0.01)
    rendered = window.render(query="docker", thread_id="main")  # while summaries are running
    assert rendered.tokens <= 512 and rendered.topics
    assert not task.done()
    await task


def test_summary_for_offline_keeps_paths_identifiers_versions_numbers() -> None:
    window = ContextWindow(WindowConfig(history_budget=256))
    window.append(
        "t",
        "user",
        "Pin torch==2.3.1 and set NCCL_P2P_DISABLE=1 in docker/Dockerfile; port 5050.",
    )
    window.append(
        "t",
        "assistant",
        "Done: `trainer/loop.py::run_epoch` now wraps eval in torch.no_grad(), batch 64.",
    )
    request = SummaryRequest(messages=tuple(window.log.get_many([1, 2])), target_tokens=80)
    text = ExtractiveSummarizer().summarize_now(request).text
    for needle in ("2.3.1", "NCCL_P2P_DISABLE", "docker/Dockerfile", "5050", "trainer/loop.py"):
        assert needle in text
    assert "```" not in text


async def test_topics_gather_a_batch_before_a_summary_call() -> None:
    window = ContextWindow(WindowConfig(history_budget=512, summary_batch_tokens=400))
    calls = 0

    class Counting:
        name = "counting"

        async def summarize(self, request: SummaryRequest) -> SummaryResult:
            nonlocal calls
            calls += 1
            assert sum(m.tokens for m in request.messages) >= 400
            return await ExtractiveSummarizer().summarize(request)

    for i in range(40):
        window.append("t", "user", f"build_loader in data/loader.py uses num_workers={i} " * 3)
        window.append("t", "assistant", f"set prefetch_factor={i} and pin_memory for the loader")
        window.graduate()
        await resolve_round(window, Counting())
    graduated = sum(m.tokens for m in window.log.get_many(iter(window.forest)))
    assert 0 < calls <= graduated // 400
    assert window.render(thread_id="t").tokens <= 512


async def test_self_hosted_server_needs_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with StubLLM() as stub:
        summarizer = LiteLLMSummarizer("openai/local", api_base=stub.base_url, timeout=120)
        request = filled_window(budget=512).summary_jobs(force=True)[0].request
        result = await summarizer.summarize(request)
        assert result.model == "openai/local" and result.text
        assert stub.calls("summary")


OLDER_EXCHANGE = [
    "Partners hammer POST /invoices from scripts all day. I want a rate limit per API key in "
    "Redis, and the limit should be configurable per partner because two of them batch at night.",
    "Count each request with INCR on a key per API key and minute in app/middleware/ratelimit.py. "
    "Let the key expire after 60 seconds so nothing accumulates. Read the partner's limit from "
    "the partners table and cache it for five minutes.",
]
NEWER_EXCHANGES = [
    "Alembic revision 0042 adds the due_date column to invoices, but alembic upgrade head fails "
    "on my machine with a missing revision error. What happened to my local database?",
    "Your alembic_version row still points at a revision that was deleted when the branch was "
    "rebased. Stamp the database to the current head first, then upgrade again.",
    "After the stamp, the 0042 migration hits a lock timeout on the staging Postgres because the "
    "invoices table is busy during the day. Can we make it safer?",
    "Set lock_timeout to five seconds in alembic/env.py so the migration gives up quickly instead "
    "of queueing behind traffic, and retry it off-peak.",
]


def older_exchange_joins_summarized_topic(
    summarized: bool = True, budget: int = 2048
) -> tuple[ContextWindow, int]:
    """A window whose topic (messages 3-6, `summarized` or not) is joined by an older exchange
    (1-2): its member list is [3, 4, 5, 6, 1, 2]."""
    window = ContextWindow(WindowConfig(history_budget=budget))
    for n, text in enumerate(OLDER_EXCHANGE + NEWER_EXCHANGES):
        window.append("main", "user" if n % 2 == 0 else "assistant", text)
    window.flush_thread("main")
    older, newer = window.forest.find(1), window.forest.find(3)
    if older == newer or window.forest.find(6) != newer:
        pytest.fail("the test did not manage to make two topics")
    if summarized:
        (job,) = [j for j in window.summary_jobs(force=True) if j.topic_id == newer]
        assert window.apply_summary(job, ExtractiveSummarizer().summarize_now(job.request))
    return window, window._union(older, newer)


def test_messages_that_join_a_summarized_topic_from_before_it_are_told_first() -> None:
    window, survivor = older_exchange_joins_summarized_topic()
    (job,) = [j for j in window.summary_jobs(force=True) if j.topic_id == survivor]
    request = job.request
    assert [m.id for m in request.messages] == [1, 2] and request.earlier == 2
    transcript = request.transcript()
    assert transcript.index("Partners hammer") < transcript.index("# EARLIER SUMMARY")
    # the offline summary reads in conversation order too: the older exchange's sentences first
    digest = Digest(request.previous_summary, request.messages, earlier=request.earlier)
    told = [n for n, source in enumerate(digest.sources) if source[0] < 0]  # the summary's
    own = [n for n, source in enumerate(digest.sources) if source[0] >= 0]
    assert told and own and max(own) < min(told)
    summary = ExtractiveSummarizer().summarize_now(request).text
    assert "Partners hammer" in summary


def test_a_topic_lists_and_expands_its_messages_in_conversation_order() -> None:
    window, survivor = older_exchange_joins_summarized_topic()
    assert window.forest.members(survivor) != sorted(window.forest.members(survivor))
    assert window.member_ids(survivor) == [1, 2, 3, 4, 5, 6]  # a preview's pages
    assert [m.id for m in window.members(survivor)] == [1, 2, 3, 4, 5, 6]
    assert [m.id for m in window.expand(survivor)] == [1, 2, 3, 4, 5, 6]


def test_a_topic_not_summarized_yet_is_quoted_in_conversation_order() -> None:
    window, survivor = older_exchange_joins_summarized_topic(summarized=False)
    assert window.forest.members(survivor) != sorted(window.forest.members(survivor))
    text = window.render(thread_id="main").text()
    starts = [text.index(t[:40]) for t in OLDER_EXCHANGE + NEWER_EXCHANGES]
    assert starts == sorted(starts)


@pytest.mark.parametrize("budget", [2048, 300])  # quoted whole; a digest of summary and messages
def test_a_summarized_topic_quotes_messages_from_before_its_summary_first(budget: int) -> None:
    window, survivor = older_exchange_joins_summarized_topic(budget=budget)
    assert window.uncovered(survivor) == [1, 2]
    text = window.render(thread_id="main").text()
    block = text[text.index(f"## Topic {survivor}:") :]
    older, summarized = "Partners hammer", "Alembic revision 0042 adds"  # what the summary tells
    assert older in block and summarized in block
    assert block.index(older) < block.index(summarized)
