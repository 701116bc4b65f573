"""Background summarization of dirty topics, off the chat's critical path.

Each round snapshots one job per dirty topic, runs them concurrently, and applies each result only
if its topic is unchanged (the window discards stale ones, which then stay dirty for next round).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from topicforest.engine.summarize.base import Summarizer, SummaryResult
from topicforest.engine.summarize.flat import summarize_flat
from topicforest.engine.summary_jobs import SummaryJob
from topicforest.engine.window import ContextWindow

log = logging.getLogger(__name__)


@dataclass
class RoundReport:
    applied: int = 0
    stale: int = 0
    failed: int = 0


async def resolve_round(
    window: ContextWindow,
    summarizer: Summarizer,
    *,
    force: bool = False,
    idle: bool = False,
    concurrency: int = 4,
    on_applied: Callable[[SummaryJob, SummaryResult], None] | None = None,
) -> RoundReport:
    """Summarize every topic that is due once (see `ContextWindow.summary_jobs`)."""
    report = RoundReport()
    gate = asyncio.Semaphore(concurrency)

    async def run(job: SummaryJob) -> None:
        async with gate:
            try:
                result = await summarizer.summarize(job.request)
            except Exception as exc:  # the cascade's floor rarely fails; never crash the loop
                log.warning("summary of topic %s failed: %s", job.topic_id, exc)
                report.failed += 1
                return
        if window.apply_summary(job, result):
            report.applied += 1
            if on_applied:
                on_applied(job, result)
        else:
            report.stale += 1

    jobs = window.summary_jobs(force=force, idle=idle)
    await asyncio.gather(*(run(job) for job in jobs))
    if window.wants_fallback:
        await refresh_fallback(window, summarizer)
    return report


async def resolve_all(
    window: ContextWindow, summarizer: Summarizer, *, force: bool = True, max_rounds: int = 50
) -> int:
    """Run rounds until no job is due (or `max_rounds`); returns summaries applied.

    By default every dirty topic is summarized, however little it gathered (`force`)."""
    applied = 0
    for _ in range(max_rounds):
        if not window.summary_jobs(force=force):
            break
        report = await resolve_round(window, summarizer, force=force)
        applied += report.applied
        if report.applied == 0 and report.failed:
            break
    return applied


async def refresh_fallback(window: ContextWindow, summarizer: Summarizer) -> None:
    """Flat summary of everything graduated, for renders where no topic fits."""
    window.wants_fallback = False
    ids = sorted(m for root in window.forest.live_roots() for m in window.forest.members(root))
    messages = window.log.get_many(ids)
    if not messages:
        return
    budget = window.config.history_budget - window.config.hot_budget
    flat = await summarize_flat(messages, budget, summarizer, window.count)
    window.set_fallback_summary("\n".join(f"{m.role}: {m.content}" for m in flat))
