"""The window's summaries: which topics need one, what each summarizer call gets, and storing
what comes back (a mixin of `ContextWindow`: summaries are made elsewhere, see `resolver`)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from topicforest.engine.config import WindowConfig
from topicforest.engine.forest import Forest, list_changes
from topicforest.engine.keylines import phrases as message_phrases
from topicforest.engine.messages import Message, MessageLog
from topicforest.engine.passages import condense
from topicforest.engine.recluster import Refiner
from topicforest.engine.state import Spend, Summary
from topicforest.engine.summarize.base import (
    TITLE_PREFIX,
    SummaryRequest,
    SummaryResult,
    model_title,
    summary_body,
)
from topicforest.engine.titles import Titles
from topicforest.engine.tokens import TokenCounter

SUMMARY_OVERSIZE = 3  # summaries keep more than a render share; render cuts them to fit
MAX_JOB_TOKENS = 6000
SUMMARY_MESSAGE_TOKENS = 250  # a message longer than this is condensed for the summarizer
MIN_SUMMARY_TOKENS = 40  # source tokens per summarize call; bigger backlogs take several rounds
TITLE_MESSAGES = 64  # the newest members an offline title is made from


class Uncovered(NamedTuple):
    """A topic's members no summary covered when last scanned (`ContextWindow.uncovered`)."""

    version: int  # the topic's, then
    summary: Summary | None
    covered: int  # how many members the summary covered (it can grow in place)
    members: list[int]  # the member list scanned (a copy)
    ids: list[int]


@dataclass(frozen=True)
class SummaryJob:
    topic_id: int
    version: int
    request: SummaryRequest
    message_ids: tuple[int, ...]


class SummaryJobs:
    """Summary bookkeeping over the window's forest and log (`ContextWindow`'s own state)."""

    config: WindowConfig
    count: TokenCounter
    log: MessageLog
    forest: Forest
    refiner: Refiner
    titles: Titles
    summaries: dict[int, Summary]
    spend: dict[int, Spend]
    pending_terms: dict[int, Counter[str]]
    fallback_summary: str | None
    _uncovered: dict[int, Uncovered]

    def set_fallback_summary(self, text: str | None) -> None:
        """The flat summary of everything graduated (renders where no topic fits use it)."""
        self.fallback_summary = text

    def is_dirty(self, root: int) -> bool:
        summary = self.summaries.get(root)
        return summary is None or summary.version != self.forest.version(root)

    def summary_jobs(
        self, target_tokens: int | None = None, *, force: bool = False, idle: bool = False
    ) -> list[SummaryJob]:
        """One job per dirty live topic: its previous summary plus members not yet covered.

        A topic waits until its not-yet-summarized messages reach `summary_batch_tokens` (render
        shows them verbatim meanwhile): summarizing after every message would pay for the
        previous summary again each time and, with a size-limited summarizer, wear it down.
        `idle` (the user paused) also takes topics with no summary yet once they hold half a
        batch: a first summary re-pays nothing. `force` takes every dirty topic (tests, the end
        of an evaluation).
        """
        jobs = []
        for root in self.forest.live_roots():
            if not self.is_dirty(root):
                continue
            summary = self.summaries.get(root)
            fresh = self.uncovered(root)
            if not fresh and summary:  # a merge of two summarized topics needs no model call
                summary.version = self.forest.version(root)
                continue
            if not force:  # an exchange that may still change topic is summarized later
                fresh = [m for m in fresh if self.refiner.settled(m)]
            pending = self.log.get_many(fresh)
            size = sum(m.tokens for m in pending)
            batch_size = self.config.summary_batch_tokens
            due = force or size >= batch_size or (idle and not summary and size >= batch_size // 2)
            if not due:
                continue
            batch: list[Message] = []
            size = 0
            for message in pending:
                if batch and size + message.tokens > MAX_JOB_TOKENS:
                    break
                batch.append(message)
                size += message.tokens
            request = SummaryRequest(
                messages=tuple(self._condensed(m) for m in batch),
                previous_summary=summary_body(summary.text) if summary else None,
                # never longer than half of what it summarizes
                target_tokens=min(
                    target_tokens or self.summary_target(),
                    max(MIN_SUMMARY_TOKENS, (size + (summary.tokens if summary else 0)) // 2),
                ),
                earlier=summary.before(batch) if summary else 0,
            )
            jobs.append(
                SummaryJob(root, self.forest.version(root), request, tuple(m.id for m in batch))
            )
        return jobs

    def _condensed(self, message: Message) -> Message:
        """A long paste goes to the summarizer as its prose and the code lines that name
        things, not whole: the original stays in the log for recall and expand."""
        if message.tokens <= SUMMARY_MESSAGE_TOKENS:
            return message
        text = condense(message.content, SUMMARY_MESSAGE_TOKENS, self.count)
        return dataclasses.replace(message, content=text, tokens=self.count(text))

    def uncovered(self, root: int) -> list[int]:
        """The topic's members no summary covers yet, in conversation order (a merge or a move
        appends members out of it; ids grow with time).

        Remembered until the topic or its summary changes: a render meets every dirty topic,
        and scanning a big topic's members each time cost a millisecond per turn at 10k. After
        a change that took members out, added some at the end or added to what the summary
        covers (re-clustering, a graduation, a new summary of the same topic: here or in
        another window) only the remembered ones and the changed part of the list are looked
        at; at 100,000 messages a render after other windows' upkeep rescanned topic after
        topic of thousands of members."""
        summary = self.summaries.get(root)
        info = self.forest.root(root)
        members = info.members
        covered = summary.covered if summary else set()
        cached = self._uncovered.get(root)
        changes = None
        if cached is not None:
            if (
                cached.summary is summary
                and cached.covered == len(covered)
                and cached.version == info.version
            ):
                return cached.ids
            before = cached.summary.covered if cached.summary else set()
            # a summary's covered set only grows in place; a new one must hold the old one's
            if cached.summary is summary or before <= covered:
                changes = list_changes(cached.members, members)
        if cached is not None and changes is not None:
            gone, appended = changes
            ids = cached.ids
            if gone or len(covered) != cached.covered or cached.summary is not summary:
                left = set(gone)  # else the remembered ones all stand (a big topic's thousands)
                ids = [m for m in ids if m not in left and m not in covered]
            # (a merge appends the other topic's list, which may itself be out of order)
            new = sorted(m for m in appended if m not in covered)
            if new:  # after the rest, unless a merge or move brought older ones
                ids = ids + new if not ids or ids[-1] < new[0] else sorted(ids + new)
        else:
            ids = sorted(m for m in members if m not in covered)
        if len(self._uncovered) > 4 * self.config.max_topics + 64:
            self._uncovered.clear()
        self._uncovered[root] = Uncovered(info.version, summary, len(covered), list(members), ids)
        return ids

    def summary_target(self) -> int:
        """Tokens per topic summary: the topic share of the budget split across live topics."""
        topic_budget = self.config.history_budget - self.config.hot_budget
        live = max(1, len(self.forest.live_roots()))
        return max(60, min(400, SUMMARY_OVERSIZE * topic_budget // live))

    def apply_summary(self, job: SummaryJob, result: SummaryResult) -> bool:
        """Store a finished summary unless its topic changed meanwhile (then it stays dirty)."""
        spent = self.spend.setdefault(job.topic_id, Spend())
        spent.calls += 1
        spent.input_tokens += result.input_tokens
        spent.output_tokens += result.output_tokens
        if (
            not self.forest.is_root(job.topic_id)
            or self.forest.version(job.topic_id) != job.version
        ):
            return False
        if self.forest.root(job.topic_id).dropped:
            return False
        previous = self.summaries.get(job.topic_id)
        covered = (previous.covered if previous else set()) | set(job.message_ids)
        members = self.forest.members(job.topic_id)
        complete = covered.issuperset(members)
        text = result.text
        if not model_title(text):  # the offline title, stored with the summary: every window
            text = f"{TITLE_PREFIX} {self._offline_title(job)}\n{text}"  # shows the same one
        self.summaries[job.topic_id] = Summary(
            text=text,
            version=job.version if complete else -1,  # a partial batch keeps the topic dirty
            covered=covered,
            tokens=self.count(summary_body(text)),
            model=result.model,
        )
        for message_id in job.message_ids:
            self.pending_terms.pop(message_id, None)
        return True

    def dirty_topic_ids(self) -> list[int]:
        return [r for r in self.forest.live_roots() if self.is_dirty(r)]

    def _offline_title(self, job: SummaryJob) -> str:
        """From the phrases of the topic's newest members (what key-line upkeep has collected
        by then varied from run to run, and so did the title), the messages summarized now
        counted twice: what the topic is about now names it best (word overlap of the dev set's
        offline titles with its labelled subjects 0.59, the same with 200 members; 0.58
        counting them once). A few milliseconds in upkeep the first time (phrases are cached)."""
        members = self.forest.members(job.topic_id)[-TITLE_MESSAGES:]
        phrases: Counter[str] = Counter()
        for message in [*self.log.get_many(members), *job.request.messages]:
            phrases.update(message_phrases(message.content))
        return self.titles.offline(job.topic_id, phrases)
