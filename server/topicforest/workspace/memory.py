"""`WorkspaceMemory`: one workspace's topic verbs and queries, the facade the server calls.

It composes collaborators that never import it: the store session (`session`: the workspace's
SQLite store, or a null session when unstored), the models (`models`), the chat turn (`turn`,
with the send gate), upkeep (`upkeep`: graduation, re-clustering, summaries in one background
task per workspace, never awaited by a turn) and events (`events`). It has no pygls import, so
the demo, benchmarks and tests drive it directly.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from topicforest.attachments import Attachment, AttachmentLog, AttachmentRef
from topicforest.engine import ContextWindow, Message, TopicView
from topicforest.engine.matches import Match, matches
from topicforest.engine.render import RenderedContext
from topicforest.engine.summarize.base import Summarizer
from topicforest.store.binding import StoreBinding, workspace_folder
from topicforest.store.errors import ForeignThread, StoreError, StoreUnreachable
from topicforest.workspace.chat_model import ChatModel
from topicforest.workspace.errors import UnknownThread
from topicforest.workspace.events import Events, MemoryListener
from topicforest.workspace.gate import SendGate
from topicforest.workspace.keys import ApiKeys
from topicforest.workspace.model_check import ModelCheck
from topicforest.workspace.models import Models
from topicforest.workspace.reopen import Reopen
from topicforest.workspace.session import (
    NullSession,
    StoredSession,
    StoreSession,
    ThreadInfo,
)
from topicforest.workspace.settings import Settings, window_config
from topicforest.workspace.turn import ChatOutcome, ChatTurns
from topicforest.workspace.upkeep import RECLUSTER_SLICE_SECONDS, Upkeep

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reshaped:
    """A topic after an expand or pin, with what it did to the thread's next request."""

    topic: TopicView
    sent: list[Message]  # of an expanded topic: the originals that request carries
    pushed_out: list[int]  # topics that request carried before and has no room for now


class WorkspaceMemory:
    def __init__(
        self,
        key: str,
        settings: Settings | None = None,
        *,
        listener: MemoryListener | None = None,
        window: ContextWindow | None = None,
        summarizer: Summarizer | None = None,
        persist: bool | None = None,
        readonly: bool = False,
    ) -> None:
        """`readonly`: the workspace's existing store, only read (an agent's MCP server): no
        upkeep, never the maintenance lease, every change refused by the store."""
        self.key = key  # workspace folder URI, or "global"
        self.readonly = readonly
        self.settings = settings or Settings()
        self.max_input_tokens: int | None = None  # learnt once litellm is warm
        self.folder = workspace_folder(key)  # absolute paths under it are shown relative
        self.session: StoreSession = NullSession(
            window or ContextWindow(window_config(self.settings, None, self.folder))
        )
        # A memory built without an explicit window lives in the workspace's SQLite store,
        # opened by open_store() once settings (storePath) are known.
        self.persist = window is None if persist is None else persist
        self.store_error: str | None = None
        self.active_file: str | None = None
        self.events = Events(key, listener)
        self.models = Models(self.settings, summarizer)
        self.gate = SendGate()
        self.upkeep = Upkeep(
            key, lambda: self.session, lambda: self.models.summarizer, self.events, self.gate
        )
        self.turns = ChatTurns(
            lambda: self.session,
            lambda: self.settings,
            self.models,
            self.gate,
            self.append,
            self.render,
            self.upkeep.kick,
        )
        self.reopen = Reopen(key, self._open_binding, self._reopened, self._refuse)
        self._next: tuple[tuple[int, int, str | None, str | None], RenderedContext] | None = None
        self._started = False
        self._closed = False

    # -- what collaborators hold, for callers ---------------------------------------------
    @property
    def window(self) -> ContextWindow:
        return self.session.window

    @property
    def attachments(self) -> AttachmentLog:
        return self.session.attachments

    @property
    def binding(self) -> StoreBinding | None:
        """The store binding of a stored memory (None: unstored, or the store failed)."""
        return self.session.binding if isinstance(self.session, StoredSession) else None

    @property
    def listener(self) -> MemoryListener | None:
        return self.events.listener

    @listener.setter
    def listener(self, listener: MemoryListener | None) -> None:
        self.events.listener = listener

    @property
    def chat_model(self) -> ChatModel:
        return self.models.chat_model

    @property
    def summarizer(self) -> Summarizer:
        return self.models.summarizer

    @property
    def critical_path(self) -> list[float]:
        """Seconds from receiving each recent chat turn to its request leaving."""
        return list(self.turns.critical_path)

    @property
    def idle_seconds(self) -> float:
        return self.upkeep.idle_seconds

    @idle_seconds.setter
    def idle_seconds(self, seconds: float) -> None:
        self.upkeep.idle_seconds = seconds

    @property
    def settle_seconds(self) -> float:
        return self.upkeep.settle_seconds

    @settle_seconds.setter
    def settle_seconds(self, seconds: float) -> None:
        self.upkeep.settle_seconds = seconds

    # -- configuration ---------------------------------------------------------------------
    def configure(
        self, settings: Settings, max_input_tokens: int | None = None, keys: ApiKeys | None = None
    ) -> None:
        """Apply new settings (and the client's API keys, if given); topics already formed keep
        their shape (new limits apply next)."""
        self.settings = settings
        self.max_input_tokens = max_input_tokens
        self.window.config = window_config(settings, self.max_input_tokens, self.folder)
        self.models.configure(settings, keys)
        self.events.touch()
        self.kick()

    # -- mutations ---------------------------------------------------------------------------
    def append(
        self,
        thread_id: str,
        role: str,
        content: object,
        *,
        cancelled: bool = False,
        wake: bool = True,
    ) -> Message:
        """Store a message verbatim (raises InvalidMessage, changing nothing) and wake upkeep."""
        if self.store_error is not None:
            raise StoreError(self.store_error)
        message = self.window.append(thread_id, role, content, cancelled=cancelled)
        self.session.note(message)
        self.events.touch()
        if wake:
            self.kick()
        return message

    def drop(self, topic_id: int) -> TopicView:
        self.window.drop(topic_id)
        return self._changed("dropped", topic_id)

    def restore(self, topic_id: int) -> TopicView:
        self.window.restore(topic_id)
        self.kick()  # a restored topic may be dirty again
        return self._changed("restored", topic_id)

    def pin(self, topic_id: int, pinned: bool = True, thread_id: str | None = None) -> Reshaped:
        before = self._sent(thread_id)
        self.window.pin(topic_id, pinned)
        topic = self._changed("pinned" if pinned else "unpinned", topic_id)
        return self._reshaped(topic, thread_id, before)

    def expand(self, topic_id: int, thread_id: str | None = None) -> Reshaped:
        """Expand the topic; what the thread's next request carries of it (its opening question
        first) and the topics that request no longer has room for."""
        before = self._sent(thread_id)
        self.window.expand(topic_id)
        return self._reshaped(self._changed("expanded", topic_id), thread_id, before)

    def _sent(self, thread_id: str | None) -> set[int]:
        return {t.id for t in self.next_render(thread_id).topics}

    def _reshaped(self, topic: TopicView, thread_id: str | None, before: set[int]) -> Reshaped:
        after = self.next_render(thread_id)
        now = {t.id: t for t in after.topics}
        ids = now[topic.id].message_ids if topic.id in now and topic.expanded else ()
        pushed = sorted(t for t in before - now.keys() if t != topic.id)
        return Reshaped(topic, self.window.log.get_many(ids), pushed)

    def collapse(self, topic_id: int) -> TopicView:
        self.window.collapse(topic_id)
        return self._changed("collapsed", topic_id)

    def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        info = self.session.rename_thread(thread_id, title)
        if info is None:
            raise UnknownThread(f"unknown thread {thread_id!r}")
        self.events.threads_changed(thread_id)
        return info

    def delete_thread(self, thread_id: str) -> int:
        """Delete every message of the thread from the store and the forest (see
        `ContextWindow.forget`), with its attachments; returns how many messages went."""
        if self.store_error is not None:
            raise StoreError(self.store_error)
        ids = self.session.thread_message_ids(thread_id)
        if not ids:
            raise UnknownThread(f"unknown thread {thread_id!r}")
        with self.session.transaction():
            changed = self.window.forget(ids)
            self.attachments.remove(ids)
        self.session.forget_thread(thread_id)
        self.events.topics_changed("threadDeleted", sorted(changed))
        self.events.threads_changed(thread_id)
        self.kick()  # topics that lost members are summarized again
        return len(ids)

    def _changed(self, reason: str, topic_id: int) -> TopicView:
        self.events.topics_changed(reason, [topic_id])
        return self.window.topic(topic_id)

    # -- queries ---------------------------------------------------------------------------
    def topics(self) -> list[TopicView]:
        return self.window.topics()

    def topic(self, topic_id: int) -> TopicView:
        return self.window.topic(topic_id)

    def preview(
        self, topic_id: int, offset: int = 0, limit: int | None = None
    ) -> tuple[TopicView, list[Message]]:
        """The topic and its messages (`limit` of them from `offset`: a page of a long one)."""
        topic = self.window.topic(topic_id)
        if not offset and limit is None:
            return topic, self.window.members(topic_id)
        ids = self.window.member_ids(topic.id)
        page = ids[offset:] if limit is None else ids[offset : offset + limit]
        return topic, self.window.log.get_many(page)

    def search(
        self, query: str, limit: int, *, live: bool = False
    ) -> list[tuple[TopicView, float]]:
        """The topics most similar to `query`, best first (`live`: no dropped topic)."""
        scored = self.window.search(query, len(self.window.forest.roots()) if live else limit)
        found = [(self.window.topic(t), s) for t, s in scored]
        return [(t, s) for t, s in found if not (live and t.dropped)][:limit]

    def matches(self, query: str, topic_ids: Iterable[int]) -> dict[int, Match]:
        """Why each topic matches `query`: the files and symbols it names, the passages."""
        return matches(self.window, query, topic_ids)

    def render(
        self,
        query: str | None = None,
        active_file: str | None = None,
        thread_id: str | None = None,
        *,
        upto: int | None = None,
        budget: int | None = None,
    ) -> RenderedContext:
        """What the model would see; `budget`: within that many tokens instead of the history
        budget (an agent's recall; the window's own budget is back before this returns)."""
        config = self.window.config
        if budget is not None:
            self.window.config = dataclasses.replace(config, history_budget=budget)
        try:
            return self.window.render(
                query=query,
                active_file=active_file or self.active_file,
                thread_id=self._readable(thread_id),
                upto=upto,
            )
        finally:
            self.window.config = config

    def _readable(self, thread_id: str | None) -> str | None:
        """`thread_id` if this person may read it, else None: in a team memory another person's
        thread renders as no thread (its hot messages are theirs), as threadHistory shows it
        empty."""
        if thread_id is None:
            return None
        try:
            self.session.check_owner(thread_id)
        except ForeignThread:
            return None
        return thread_id

    def next_render(self, thread_id: str | None = None) -> RenderedContext:
        """The history the next request of `thread_id` would carry before its question is known
        (renderContext {threadId} with no query; listTopics' `used`, `rendered`,
        `omittedTopics`), cached until anything changes."""
        thread_id = self._readable(thread_id)
        key = (self.events.version, id(self.window), self.active_file, thread_id)
        if self._next is None or self._next[0] != key:
            try:
                self._next = (key, self.render(thread_id=thread_id))
            except StoreError as exc:  # a render reads message text; the topics are in memory
                if self._next is None:
                    raise
                log.warning("listTopics: the history as last rendered (%s)", exc)
        return self._next[1]

    def attached(self, messages: list[Message]) -> list[tuple[Message, list[AttachmentRef]]]:
        """Each message with the references of what its turn attached (one lookup for all)."""
        refs = self.attachments.refs(m.id for m in messages if m.role == "user")
        return [(m, refs.get(m.id, [])) for m in messages]

    def threads(self) -> list[ThreadInfo]:
        return self.session.threads()

    def history(self, thread_id: str, limit: int | None = None) -> list[Message]:
        return self.session.history(thread_id, limit)

    def message_count(self) -> int:
        return len(self.window.log)

    # -- chat ------------------------------------------------------------------------------
    async def chat(
        self,
        thread_id: str,
        turn_id: str,
        text: str,
        *,
        active_file: str | None = None,
        on_delta: Callable[[int, str], None] = lambda index, delta: None,
        attachments: list[Attachment] | None = None,
        model: str | None = None,
        retry_of: int | None = None,
    ) -> ChatOutcome:
        """One turn: store the question, render, stream the model's answer, store it.

        `attachments` go into this request only, fitted to `attachmentBudget` (the stored
        question gets a reference line per attachment; the text sent is stored beside it).
        `model` overrides the chat model for this turn. `retry_of` (the thread's last user
        message) answers that question again: nothing new is stored but the reply, and its
        attachments are sent again as they were. Cancellation (the task is cancelled while
        streaming) stores the partial reply marked cancelled and returns normally with
        `cancelled=True`.
        """
        return await self.turns.chat(
            thread_id,
            turn_id,
            text,
            active_file=active_file,
            on_delta=on_delta,
            attachments=attachments,
            model=model,
            retry_of=retry_of,
        )

    async def test_model(self, model: str | None = None, api_base: str | None = None) -> ModelCheck:
        """One tiny request to `model` (default: the chat model): does it answer, and if not,
        why, in plain words (`Models.test`)."""
        return await self.models.test(model, api_base)

    # -- background upkeep ---------------------------------------------------------------------
    def start(self) -> None:
        """Open the store if need be and start upkeep (needs a running loop); idempotent. A
        read-only memory only watches its store."""
        self.open_store()
        if not self._started and not self._closed:
            self._started = True
            self._start_session()
            if not self.readonly:
                self.upkeep.start()
            self.reopen.start()  # if the store's database was unreachable

    def kick(self) -> None:
        self.upkeep.kick()

    async def maintain(self, *, idle: bool = False, settle: bool = False) -> None:
        """One upkeep round now (see `Upkeep.maintain`)."""
        await self.upkeep.maintain(idle=idle, settle=settle)

    async def summarize_dirty(self, *, idle: bool = False, settle: bool = False) -> int:
        return await self.upkeep.summarize_dirty(idle=idle, settle=settle)

    async def close(self) -> None:
        self._closed = True
        await self.reopen.close()
        await self.upkeep.close()
        await self.session.close()
        self.session = NullSession(self.window)  # closed: nothing is stored any more
        await self.models.close()

    # -- the store -------------------------------------------------------------------------
    def open_store(self) -> None:
        """Open the workspace's store now, if this memory is stored (no running loop needed, so
        `early` can answer from it before the server's loop exists); `start` begins its tasks.
        On failure keep serving from memory and refuse changes with the store's error (nothing
        is written to a bad store); an unreachable database is tried again in the background
        (`Reopen`, begun by `start`)."""
        if self._closed or not self.persist or self.binding is not None or self.store_error:
            return
        try:
            binding = self._open_binding()
        except StoreError as exc:
            self._refuse(exc)
            return
        self._use(binding)

    def _open_binding(self) -> StoreBinding:
        settings = self.settings
        return StoreBinding.open(
            self.key,
            settings.store_path,
            self.window.config,
            count=self.window.count,
            url=settings.store_url,
            user=settings.user,
            readonly=self.readonly,
        )

    def _refuse(self, exc: StoreError) -> None:
        """The store cannot be opened: say why (logged, and the answer to every change)."""
        first = self.store_error is None
        retry = isinstance(exc, StoreUnreachable)
        self.reopen.due = retry
        self.store_error = f"Topic Forest cannot use its memory store: {exc}" + (
            "; trying again in the background" if retry else ""
        )
        if first or not retry:
            log.error("%s", self.store_error)
        else:
            log.debug("%s", self.store_error)

    def _use(self, binding: StoreBinding) -> None:
        self.session = StoredSession(binding)
        # A first slice of key lines now, so a small memory renders the same before upkeep
        # starts as after (a big one gets the rest in upkeep).
        self.window.prepare_key_lines(RECLUSTER_SLICE_SECONDS)
        log.info("memory of %s stored in %s", self.key, binding.store.where)

    def _reopened(self, binding: StoreBinding) -> None:
        """The database became reachable: serve and change the stored memory from now on."""
        self.store_error = None
        self._use(binding)
        self._start_session()
        log.info("the memory store of %s is reachable again", self.key)
        self.events.threads_changed(None)
        self._external_change()  # the client lists the stored topics

    def _start_session(self) -> None:
        """Watch other windows' commits (loaded while no chat turn is sending) and the lease."""
        self.session.start(self._watched_change, self.kick, self.gate.wait)

    def _watched_change(self) -> None:
        """The watcher loaded other windows' commits. What they left for renders is done first,
        before a turn can run: a turn that came in before upkeep's round got to it paid for it
        (most of the team's slowest turns). Not for an early answer's `refresh`: in a window
        just opened that is the whole memory's first preparation (a second at 100,000
        messages), and the first `listTopics` would wait for it."""
        try:
            self.window.prepare_render()
        except Exception:  # ahead of time only: the next render does it again, and reports
            log.exception("preparing renders after a reload of %s failed", self.key)
        self._external_change()

    def refresh(self) -> None:
        """Load what other windows committed now: what the store watcher does once started
        (`early` answers before it runs). Raises StoreError."""
        if self.session.refresh():
            self._external_change()

    def _external_change(self) -> None:
        """Another window committed: our window has reloaded; tell the client, maintain."""
        self.events.topics_changed("external", None)
        appended = self.session.take_threads_changed()
        if appended is not None:
            self.events.threads_changed(None, appended)
        self.kick()
