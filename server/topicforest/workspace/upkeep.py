"""Upkeep: one background task per workspace that graduates, re-clusters, summarizes and tidies.

It is woken after each append (and by the store when this process becomes the maintainer), and
after quiet spells: a short one (`idle_seconds`) gives new topics their first summary, a long one
(`settle_seconds`) brings every summary up to date. Each round waits at the send gate, so its
synchronous work never lands between a chat turn's receipt and its request leaving.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from collections.abc import AsyncIterator, Callable

from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize.base import Summarizer
from topicforest.workspace.events import Events
from topicforest.workspace.gate import SendGate
from topicforest.workspace.session import StoreSession

log = logging.getLogger(__name__)

MAX_ROUNDS = 20  # summary rounds per wake-up; a failing provider cannot spin the loop forever
RECLUSTER_SLICE_SECONDS = 0.05  # upkeep work per round besides summaries (never on a turn)
# ...done in steps of at most this long, the event loop let through between them, so a turn
# arriving meanwhile waits one step, not a whole slice (it waited up to 50 ms at 10,000 messages)
STEP_SECONDS = 0.004
# Between steps upkeep sleeps this long, not just one loop pass: a frame that arrived meanwhile
# takes a few passes (read, dispatch, the handler's task) to become a turn holding the send gate.
YIELD_SECONDS = 0.001
IDLE_SECONDS = 2.0  # quiet time after which topics with no summary yet get their first one
SETTLE_SECONDS = 60.0  # quiet time after which every topic's summary is brought up to date
SETTLE_ENV = "TOPICFOREST_SETTLE_SECONDS"  # override, for tests and impatient demos
CLOSE_TIMEOUT = 5.0  # seconds close() waits for the maintenance task
# At most one tidy of the heap this often: with a busy team a round follows every commit of
# any window, and collecting after each cost as much as a chat turn's render at 100,000.
TIDY_SECONDS = 1.0


def settle_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(SETTLE_ENV, SETTLE_SECONDS)))
    except ValueError:
        log.warning("ignoring %s: not a number of seconds", SETTLE_ENV)
        return SETTLE_SECONDS


class Upkeep:
    def __init__(
        self,
        key: str,
        session: Callable[[], StoreSession],
        summarizer: Callable[[], Summarizer],
        events: Events,
        gate: SendGate,
    ) -> None:
        self.key = key
        self.session = session  # the current one: a memory's store may open after this exists
        self.summarizer = summarizer
        self.events = events
        self.gate = gate
        self.idle_seconds = IDLE_SECONDS
        self.settle_seconds = settle_seconds()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._tidied = 0.0  # time.monotonic() of the last tidy_heap

    @property
    def running(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        """Start the task (needs a running loop); idempotent."""
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"topicforest-maintain:{self.key}"
            )
            self._task.add_done_callback(_log_task_end)

    def kick(self) -> None:
        self._wake.set()

    async def close(self) -> None:
        self._closed = True
        self._wake.set()  # the loop also ends on its own if a cancellation gets lost
        if self._task is not None:
            self._task.cancel()
            # Bounded: on Python 3.11 a cancel that lands as a wait ends can be swallowed.
            await asyncio.wait({self._task}, timeout=CLOSE_TIMEOUT)
            self._task = None

    async def _run(self) -> None:
        quiet = 0.0  # seconds since the last append woke us
        while not self._closed:
            # While topics wait for a full summary batch, or key lines for their ranking, quiet
            # spells do it anyway.
            window = self.session().window
            idle_work = window.dirty_topic_ids() or not window.key_lines_ranked()
            wait = self.idle_seconds if idle_work else None
            try:
                async with asyncio.timeout(wait):
                    await self._wake.wait()
                quiet = 0.0
            except TimeoutError:
                quiet += wait or 0.0
            self._wake.clear()
            if self._closed:
                return
            try:
                await self.gate.wait()
                session = self.session()
                with session.unsynced():  # upkeep's commits never hold the loop up on an fsync:
                    await self.maintain(idle=quiet > 0, settle=quiet >= self.settle_seconds)
                await session.sync()  # they reach the disk from a worker thread after each round
                if time.monotonic() - self._tidied >= TIDY_SECONDS:
                    tidy_heap()
                    self._tidied = time.monotonic()
            except Exception:  # keep serving; the next append retries
                log.exception("maintenance of %s failed", self.key)

    async def maintain(self, *, idle: bool = False, settle: bool = False) -> None:
        """Graduate overflow into the forest, re-cluster a slice, then summarize topics that are
        due (`idle`: the user paused, so topics with no summary yet get their first one;
        `settle`: long quiet, every dirty topic). Every window, maintainer or not, collects
        the key lines of its topics from the shared log for its own renders (and, when idle,
        ranks them)."""
        session = self.session()
        window = session.window
        if session.maintainer:
            moved = window.graduate()
            if moved:
                roots = {window.forest.find(m.id) for m in moved}
                self.events.topics_changed("graduated", sorted(roots))
            reclustered: set[int] = set()
            async for _ in self._steps():
                reclustered |= window.refine(STEP_SECONDS, settle=settle)
                if not window.refine_pending:
                    break
            if reclustered:
                self.events.topics_changed("reclustered", sorted(reclustered))
            await self.summarize_dirty(idle=idle, settle=settle)
            if window.refine_pending:
                self.kick()  # the next slice after this round, with turns let in between
        # the recall index first: a question needs it, key lines serve renders with no query
        async for _ in self._steps():
            if window.recall.warm(STEP_SECONDS) and window.prepare_key_lines(
                STEP_SECONDS, rank=idle
            ):
                break
        else:
            self.kick()
        # Last, what this round and others' commits left for the next question's render; a
        # turn that arrived meanwhile goes first.
        await asyncio.sleep(YIELD_SECONDS)
        await self.gate.wait()
        window.prepare_render()

    async def _steps(self) -> AsyncIterator[None]:
        """Steps of one slice of `RECLUSTER_SLICE_SECONDS`, the event loop let through and any
        turn between receipt and send (here, or briefly in another server on this machine: see
        `SendGate.wait`) let out first between them; ends when the slice is spent
        (the caller breaks out when its work is done)."""
        deadline = time.perf_counter() + RECLUSTER_SLICE_SECONDS
        yield None
        while time.perf_counter() < deadline:
            await asyncio.sleep(YIELD_SECONDS)
            if not self.gate.is_quiet:
                await self.gate.wait()
            yield None

    async def summarize_dirty(self, *, idle: bool = False, settle: bool = False) -> int:
        window = self.session().window
        jobs = window.summary_jobs(idle=idle, force=settle)
        if not jobs:
            return 0
        total = len(jobs)
        done: list[int] = []
        self.events.progress("begin", f"Summarizing {total} topic(s)", 0)

        def applied(topic_id: int) -> None:
            done.append(topic_id)
            self.events.topics_changed("summarized", [topic_id])
            percentage = min(99, 100 * len(done) // max(1, total))
            self.events.progress("report", f"Summarized topic {topic_id}", percentage)

        try:
            for _ in range(MAX_ROUNDS):
                report = await resolve_round(
                    window,
                    self.summarizer(),
                    idle=idle,
                    force=settle,
                    on_applied=lambda job, result: applied(job.topic_id),
                )
                attempted = report.applied + report.stale + report.failed
                if attempted == 0 or (report.applied == 0 and report.failed):
                    break
                await asyncio.sleep(0)  # let chat turns in
        finally:
            self.events.touch()  # the flat fallback summary may have been refreshed too
            self.events.progress("end", f"Summarized {len(done)} topic(s)", 100)
        return len(done)


def freeze_heap() -> None:
    """Move every object alive now out of the garbage collector's later scans (`gc.freeze`).

    With litellm loaded the process holds ~315,000 objects and a full collection takes ~155 ms;
    one falling due inside a chat turn was the worst of its latency tail. Frozen objects are
    still freed by reference counting when dropped; only reference cycles among them would stay
    (the engine makes none). The server freezes after loading (cheap: no scan); upkeep tidies.
    """
    gc.freeze()


def tidy_heap() -> None:
    """Collect what is garbage since the last freeze, then freeze the rest: after each upkeep
    round, while the model writes, so that later collections only ever scan a turn's objects."""
    gc.collect()
    freeze_heap()


def _log_task_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s died", task.get_name(), exc_info=task.exception())
