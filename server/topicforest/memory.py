"""One workspace's memory: its context window, summary cascade and background maintenance.

Everything the server does to a workspace goes through `WorkspaceMemory`; it has no pygls import,
so the demo, benchmarks and the store can drive it directly. Persistence points (where the store
will hook in) are the methods in the "mutations" section: `append` and the topic state changes.

Maintenance (graduation into the forest, then summaries of dirty topics) runs in one background
task per workspace, woken after each append. It is never awaited by a chat turn: a turn appends,
renders and calls the model; summaries overlap the model call.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from topicforest.attachments import (
    Attachment,
    AttachmentLog,
    AttachmentRef,
    InMemoryAttachments,
    SentAttachment,
    fit,
    request_text,
    user_text,
    with_references,
)
from topicforest.chat_model import ChatModel, Usage
from topicforest.engine import ContextWindow, Message, TopicView, WindowConfig
from topicforest.engine.config import auto_history_budget
from topicforest.engine.llm import load_litellm
from topicforest.engine.render import RenderedContext, sanitize_line
from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize.base import Summarizer, SummaryRequest, SummaryResult
from topicforest.engine.summarize.cascade import CascadeSummarizer
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.server.config import Settings
from topicforest.store.binding import StoreBinding, workspace_folder
from topicforest.store.errors import StoreError

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are a coding assistant inside the user's editor. Earlier conversation may be given as "
    "topic memory; use it when relevant and say so when you need details you cannot see."
)
CHAT_TIMEOUT = 120.0  # seconds for the whole model call
MAX_ROUNDS = 20  # summary rounds per wake-up; a failing provider cannot spin the loop forever
RECLUSTER_SLICE_SECONDS = 0.05  # upkeep work per round besides summaries (never on a turn)
IDLE_SECONDS = 2.0  # quiet time after which topics with no summary yet get their first one
SETTLE_SECONDS = 60.0  # quiet time after which every topic's summary is brought up to date
SETTLE_ENV = "TOPICFOREST_SETTLE_SECONDS"  # override, for tests and impatient demos
CLOSE_TIMEOUT = 5.0  # seconds close() waits for the maintenance task
# Upkeep waits for turns between receipt and send (milliseconds), but not longer than this for
# one stuck before its first byte (an endpoint that never accepts): topics go on forming.
SEND_GATE_SECONDS = 1.0
MAX_MODELS = 8  # per-turn model overrides kept open at once
THREAD_TITLE_CHARS = 200  # a title the user gave; a first message makes one of at most 80
ProgressStage = Literal["begin", "report", "end"]


class ChatNotConfigured(Exception):
    """No `topicForest.chatModel` is set."""


class ProviderError(Exception):
    """The chat model failed; the message is safe to show (secrets redacted)."""


def _title(text: str) -> str:
    return sanitize_line(text, THREAD_TITLE_CHARS)


class UnknownThread(Exception):
    """No thread has this id (rename, delete)."""


class NotRetryable(Exception):
    """`retryOf` is not the thread's last user message."""


class MemoryListener(Protocol):
    """What the server hears from a memory (it turns these into notifications)."""

    def topics_changed(self, memory: WorkspaceMemory, reason: str, ids: list[int] | None) -> None:
        """Topic state changed (`reason`: graduated, summarized, dropped, ...)."""

    def summarizing(
        self, memory: WorkspaceMemory, stage: ProgressStage, message: str, percentage: int
    ) -> None:
        """Background summarizing started, advanced or ended."""

    def threads_changed(self, memory: WorkspaceMemory, thread_id: str | None) -> None:
        """A thread was renamed or deleted (None: another window changed threads)."""


@dataclass
class ChatOutcome:
    thread_id: str
    turn_id: str
    reply: str
    cancelled: bool
    prompt_tokens: int
    completion_tokens: int
    user_message: Message
    reply_message: Message | None
    context: RenderedContext
    attachments: list[AttachmentRef]
    model: str


@dataclass(frozen=True)
class ThreadInfo:
    thread_id: str
    message_count: int
    last_time: float
    title: str


def window_config(
    settings: Settings, max_input_tokens: int | None = None, workspace_root: str | None = None
) -> WindowConfig:
    budget = settings.history_budget
    return WindowConfig(
        history_budget=auto_history_budget(max_input_tokens) if budget == "auto" else budget,
        merge_threshold=settings.merge_threshold,
        max_topics=settings.max_topics,
        workspace_root=workspace_root,
    )


def settle_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(SETTLE_ENV, SETTLE_SECONDS)))
    except ValueError:
        log.warning("ignoring %s: not a number of seconds", SETTLE_ENV)
        return SETTLE_SECONDS


def secret_values() -> list[str]:
    """Values of environment variables that look like credentials (to keep them out of text)."""
    pattern = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
    return [v for k, v in os.environ.items() if pattern.search(k) and len(v) >= 8]


def redact(text: str) -> str:
    for value in secret_values():
        text = text.replace(value, "***")
    return re.sub(r"\bsk-[A-Za-z0-9_-]{12,}", "sk-***", text)


def short_error(exc: BaseException) -> str:
    text = redact(f"{type(exc).__name__}: {exc}".strip())
    return text if len(text) <= 500 else text[:497] + "..."


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
    ) -> None:
        self.key = key  # workspace folder URI, or "global"
        self.settings = settings or Settings()
        self.listener = listener
        self.max_input_tokens: int | None = None  # learnt once litellm is warm
        self.folder = workspace_folder(key)  # absolute paths under it are shown relative
        self.window = window or ContextWindow(window_config(self.settings, None, self.folder))
        self._fixed_summarizer = summarizer
        self.summarizer: Summarizer = summarizer or self._cascade()
        self.chat_model = self._chat_model()
        self._models: dict[str, ChatModel] = {}  # per-turn overrides of the chat model
        self.attachments: AttachmentLog = InMemoryAttachments()
        self.thread_messages: dict[str, list[int]] = {}
        self._titles: dict[str, str] = {}  # thread renames (a stored memory keeps them on disk)
        self.active_file: str | None = None
        # seconds from receiving a chat turn to its request's first bytes leaving for the model
        self.critical_path: deque[float] = deque(maxlen=1000)
        self.idle_seconds = IDLE_SECONDS
        self.settle_seconds = settle_seconds()
        self._changes = 0  # bumped by every change that can alter a render
        self._next: tuple[tuple[int, int, str | None, str | None], RenderedContext] | None = None
        self._wake = asyncio.Event()
        # Set while no chat turn is between receipt and its request leaving: upkeep waits for it,
        # so its synchronous work never lands in a turn's critical path (at the turn's awaits).
        self._requests_out = asyncio.Event()
        self._requests_out.set()
        self._sending = 0
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        # Persistence (store engineer): a memory built without an explicit window lives in the
        # workspace's SQLite store, opened by start() once settings (storePath) are known.
        self.persist = window is None if persist is None else persist
        self.binding: StoreBinding | None = None
        self.store_error: str | None = None

    # -- configuration ---------------------------------------------------------------------
    def _cascade(self) -> Summarizer:
        models = [
            LiteLLMSummarizer(m, api_base=self.settings.api_base)
            for m in self.settings.summary_models
        ]
        return CascadeSummarizer([*models, OffLoopExtractive()], offline_floor=False)

    def _chat_model(self, model: str | None = None) -> ChatModel:
        settings = self.settings
        return ChatModel(
            model or settings.chat_model or "",
            settings.api_base,
            CHAT_TIMEOUT,
            settings.chat_first_byte_timeout,
        )

    def _model_for(self, name: str) -> ChatModel:
        """The configured chat model, or a turn's override (same apiBase and key rules)."""
        if name == self.chat_model.model:
            return self.chat_model
        model = self._models.pop(name, None) or self._chat_model(name)
        self._models[name] = model  # newest last
        while len(self._models) > MAX_MODELS:
            _close_soon(self._models.pop(next(iter(self._models))))
        return model

    def configure(self, settings: Settings, max_input_tokens: int | None = None) -> None:
        """Apply new settings; topics already formed keep their shape (new limits apply next)."""
        self.settings = settings
        self.max_input_tokens = max_input_tokens
        self.window.config = window_config(settings, self.max_input_tokens, self.folder)
        if self._fixed_summarizer is None:
            self.summarizer = self._cascade()
        if (
            self.chat_model.model,
            self.chat_model.api_base,
            self.chat_model.first_byte_timeout,
        ) != (settings.chat_model or "", settings.api_base, settings.chat_first_byte_timeout):
            _close_soon(self.chat_model)  # a turn still streaming from it keeps its session
            self.chat_model = self._chat_model()
            for model in self._models.values():
                _close_soon(model)
            self._models.clear()
        self._changes += 1
        self.kick()

    # -- mutations (persistence points) ----------------------------------------------------
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
        self.thread_messages.setdefault(thread_id, []).append(message.id)
        self._changes += 1
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

    def pin(self, topic_id: int, pinned: bool = True) -> TopicView:
        self.window.pin(topic_id, pinned)
        return self._changed("pinned" if pinned else "unpinned", topic_id)

    def expand(self, topic_id: int) -> tuple[TopicView, list[Message]]:
        messages = self.window.expand(topic_id)
        return self._changed("expanded", topic_id), messages

    def collapse(self, topic_id: int) -> TopicView:
        self.window.collapse(topic_id)
        return self._changed("collapsed", topic_id)

    def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        if self.binding is not None:
            row = self.binding.store.rename_thread(thread_id, _title(title))
            if row is None:
                raise UnknownThread(f"unknown thread {thread_id!r}")
            info = ThreadInfo(row.thread_id, row.message_count, row.last_time, row.title)
        else:
            ids = self.thread_messages.get(thread_id)
            if not ids:
                raise UnknownThread(f"unknown thread {thread_id!r}")
            self._titles[thread_id] = _title(title)
            info = self._thread_info(thread_id, ids)
        self._threads_changed(thread_id)
        return info

    def delete_thread(self, thread_id: str) -> int:
        """Delete every message of the thread from the store and the forest (see
        `ContextWindow.forget`), with its attachments; returns how many messages went."""
        if self.store_error is not None:
            raise StoreError(self.store_error)
        if self.binding is not None:
            ids = self.binding.store.thread_message_ids(thread_id)
        else:
            ids = self.thread_messages.get(thread_id, [])
        if not ids:
            raise UnknownThread(f"unknown thread {thread_id!r}")
        with self._transaction():
            changed = self.window.forget(ids)
            self.attachments.remove(ids)
        self.thread_messages.pop(thread_id, None)
        self._titles.pop(thread_id, None)
        self._emit("threadDeleted", sorted(changed))
        self._threads_changed(thread_id)
        self.kick()  # topics that lost members are summarized again
        return len(ids)

    def _changed(self, reason: str, topic_id: int) -> TopicView:
        self._emit(reason, [topic_id])
        return self.window.topic(topic_id)

    # -- queries ---------------------------------------------------------------------------
    def topics(self) -> list[TopicView]:
        return self.window.topics()

    def topic(self, topic_id: int) -> TopicView:
        return self.window.topic(topic_id)

    def preview(self, topic_id: int) -> tuple[TopicView, list[Message]]:
        return self.window.topic(topic_id), self.window.members(topic_id)

    def search(self, query: str, limit: int) -> list[tuple[TopicView, float]]:
        return [(self.window.topic(t), s) for t, s in self.window.search(query, limit)]

    def render(
        self,
        query: str | None = None,
        active_file: str | None = None,
        thread_id: str | None = None,
        *,
        upto: int | None = None,
    ) -> RenderedContext:
        return self.window.render(
            query=query, active_file=active_file or self.active_file, thread_id=thread_id, upto=upto
        )

    def next_render(self, thread_id: str | None = None) -> RenderedContext:
        """The history the next request of `thread_id` would carry before its question is known
        (renderContext {threadId} with no query; listTopics' `used`, `rendered`,
        `omittedTopics`), cached until anything changes."""
        key = (self._changes, id(self.window), self.active_file, thread_id)
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
        if self.binding is not None:
            return [
                ThreadInfo(t.thread_id, t.message_count, t.last_time, _title(t.title))
                for t in self.binding.threads()
            ]
        infos = [self._thread_info(tid, ids) for tid, ids in self.thread_messages.items() if ids]
        return sorted(infos, key=lambda t: -t.last_time)

    def _thread_info(self, thread_id: str, ids: list[int]) -> ThreadInfo:
        first, last = self.window.log.get(ids[0]), self.window.log.get(ids[-1])
        title = self._titles.get(thread_id) or sanitize_line(first.content, 80)
        return ThreadInfo(thread_id, len(ids), last.timestamp, title)

    def history(self, thread_id: str, limit: int | None = None) -> list[Message]:
        if self.binding is not None:
            return self.binding.history(thread_id, limit)
        ids = self.thread_messages.get(thread_id, [])
        return self.window.log.get_many(ids[-limit:] if limit else ids)

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
        received = time.perf_counter()
        model = model or self.settings.chat_model
        if not model:
            raise ChatNotConfigured(
                "No chat model is configured. Set `topicForest.chatModel` to a litellm model "
                'string (for example "gpt-4o-mini", "anthropic/claude-3-5-haiku-latest" or '
                '"openai/<name>" with `topicForest.apiBase`) and put the provider\'s API key in '
                "the environment (for example OPENAI_API_KEY). Topics work without a model."
            )
        chat_model = self._model_for(model)
        if retry_of is not None:
            user = self._retry_target(thread_id, retry_of)
            carried = self.attachments.sent(user.id)
        else:
            carried = fit(attachments or [], self.settings.attachment_budget, self.window.count)
            with self._unsynced(), self._appending():  # fsync overlaps the model call
                user = self.append(
                    thread_id, "user", with_references(text, [a.ref for a in carried]), wake=False
                )
                self.attachments.add(user.id, carried)
        refs = [a.ref for a in carried]
        context = self.render(
            query=user_text(user.content, refs),
            active_file=active_file,
            thread_id=thread_id,
            upto=user.id if retry_of is not None else None,
        )
        messages = _request(context, user, carried)
        parts: list[str] = []
        usage: Usage | None = None
        cancelled = False
        sent = sent_at = 0.0
        synced: asyncio.Future[None] | None = None

        def on_sent() -> None:
            nonlocal sent, sent_at
            sent, sent_at = time.perf_counter(), time.time()
            self.critical_path.append(sent - received)
            self._request_left()

        self._sending += 1
        self._requests_out.clear()
        try:
            async for delta, piece_usage in chat_model.stream(messages, on_sent):
                usage = piece_usage or usage
                if synced is None:  # the request is out: disk and upkeep may have their turn
                    synced = asyncio.ensure_future(self._sync())
                    self.kick()
                if delta:
                    on_delta(len(parts), delta)
                    parts.append(delta)
        except asyncio.CancelledError:
            cancelled = True
        except Exception as exc:
            self._store_reply(thread_id, parts, cancelled=True)  # keep what did arrive
            raise ProviderError(f"The chat model {model} failed: {short_error(exc)}") from exc
        finally:
            if not sent:  # failed or cancelled before its request left
                self._request_left()
            self.kick()
            # The question must be on disk before any answer; a cancel arriving meanwhile (the
            # stream just ended) must not skip storing the reply the user has already seen.
            if await _through_cancel(synced or asyncio.ensure_future(self._sync())):
                cancelled = True
        reply = self._store_reply(thread_id, parts, cancelled=cancelled)
        if sent:
            log.debug(
                "turn %s: %.3f ms from receipt to the first byte sent at %.6f",
                turn_id,
                1000 * (sent - received),
                sent_at,  # wall clock, so a benchmark can time the pipe in front of us too
            )
        return ChatOutcome(
            thread_id=thread_id,
            turn_id=turn_id,
            reply="".join(parts),
            cancelled=cancelled,
            prompt_tokens=(usage and usage.prompt_tokens) or context.tokens,
            completion_tokens=(usage and usage.completion_tokens) or (reply.tokens if reply else 0),
            user_message=user,
            reply_message=reply,
            context=context,
            attachments=refs,
            model=model,
        )

    def _retry_target(self, thread_id: str, message_id: int) -> Message:
        if self.binding is not None:
            last = self.binding.store.last_user_message(thread_id)
        else:
            ids = self.thread_messages.get(thread_id, [])
            users = (m.id for m in self.window.log.get_many(ids[::-1]) if m.role == "user")
            last = next(users, None)
        if last is None or last != message_id:
            raise NotRetryable(
                f"message {message_id} is not the last user message of thread {thread_id!r}"
                + (f" (that is {last})" if last is not None else " (it has none)")
            )
        return self.window.log.get(message_id)

    def _request_left(self) -> None:
        self._sending -= 1
        if not self._sending:
            self._requests_out.set()

    def _transaction(self) -> contextlib.AbstractContextManager[object]:
        """One store transaction for several changes (nothing to do for an unstored memory)."""
        return self.binding.store.transaction() if self.binding else contextlib.nullcontext()

    def _appending(self) -> contextlib.AbstractContextManager[object]:
        """One append (the question and its attachments) that waits for no other writer."""
        return self.binding.store.appending() if self.binding else contextlib.nullcontext()

    def _unsynced(self) -> contextlib.AbstractContextManager[None]:
        return self.binding.store.unsynced() if self.binding else contextlib.nullcontext()

    async def _sync(self) -> None:
        """Put this process's commits on disk (off the loop: an fsync can take milliseconds)."""
        if self.binding is not None and self.binding.store.unsynced_commits:  # no idle hop
            await asyncio.to_thread(self.binding.store.sync)

    def _store_reply(self, thread_id: str, parts: list[str], *, cancelled: bool) -> Message | None:
        text = "".join(parts)
        if not text.strip():
            return None
        limit = self.window.config.max_message_chars
        return self.append(thread_id, "assistant", text[:limit], cancelled=cancelled)

    # -- background maintenance ------------------------------------------------------------
    def start(self) -> None:
        """Start the maintenance task (needs a running loop); idempotent."""
        self.open_store()
        if self._task is None and not self._closed:
            if self.binding is not None:
                self.binding.start(on_external=self._external_change, on_lease=self.kick)
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
        if self.binding is not None:
            await self.binding.close(list(self.thread_messages))
            self.binding = None
        await self.chat_model.close()
        for model in self._models.values():
            await model.close()

    # -- persistence (store engineer) ------------------------------------------------------
    def open_store(self) -> None:
        """Open the workspace's store now, if this memory is stored (no running loop needed, so
        `early` can answer from it before the server's loop exists); `start` begins its tasks."""
        if self.persist and self.binding is None and self.store_error is None:
            self._open_store()

    def _open_store(self) -> None:
        """Swap the in-memory window for the workspace's stored one; on failure keep serving
        from memory and refuse appends with the store's error (nothing is written to a bad file)."""
        try:
            settings = self.settings
            self.binding = StoreBinding.open(
                self.key,
                settings.store_path,
                self.window.config,
                count=self.window.count,
                url=settings.store_url,
                user=settings.user,
            )
        except StoreError as exc:
            self.store_error = f"Topic Forest cannot use its memory store: {exc}"
            log.error("%s", self.store_error)
            return
        self.window = self.binding.window
        self.attachments = self.binding.store.attachments
        self.binding.store.mirror.threads_changed = False  # the client lists threads anyway
        # A first slice of key lines now, so a small memory renders the same before upkeep
        # starts as after (a big one gets the rest in upkeep).
        self.window.prepare_key_lines(RECLUSTER_SLICE_SECONDS)
        log.info("memory of %s stored in %s", self.key, self.binding.store.where)

    def refresh(self) -> None:
        """Load what other windows committed now: what the store watcher does once started
        (`early` answers before it runs). Raises StoreError."""
        if self.binding is not None and self.binding.store.refresh():
            self._external_change()

    def _external_change(self) -> None:
        """Another window committed: our window has reloaded; tell the client, maintain."""
        self._emit("external", None)
        mirror = self.binding.store.mirror if self.binding else None
        if mirror is not None and mirror.threads_changed:
            mirror.threads_changed = False
            self._threads_changed(None)
        self.kick()

    async def _run(self) -> None:
        quiet = 0.0  # seconds since the last append woke us
        while not self._closed:
            # While topics wait for a full summary batch, quiet spells summarize them anyway:
            # a short one gives new topics their first summary, a long one settles everything.
            wait = self.idle_seconds if self.window.dirty_topic_ids() else None
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
                await self._until_requests_out()
                with self._unsynced():  # upkeep's commits never hold the loop up on an fsync:
                    await self.maintain(idle=quiet > 0, settle=quiet >= self.settle_seconds)
                await self._sync()  # they reach the disk from a worker thread after each round
                tidy_heap()
            except Exception:  # keep serving; the next append retries
                log.exception("maintenance of %s failed", self.key)

    async def _until_requests_out(self) -> None:
        try:
            async with asyncio.timeout(SEND_GATE_SECONDS):
                await self._requests_out.wait()
        except TimeoutError:
            log.debug("a chat request of %s has not left after %g s", self.key, SEND_GATE_SECONDS)

    async def maintain(self, *, idle: bool = False, settle: bool = False) -> None:
        """Graduate overflow into the forest, re-cluster a slice, then summarize topics that are
        due (`idle`: the user paused, so topics with no summary yet get their first one;
        `settle`: long quiet, every dirty topic). Every window, maintainer or not, collects
        the key lines of its topics from the shared log for its own renders."""
        if self.binding is None or self.binding.maintainer:
            moved = self.window.graduate()
            if moved:
                roots = {self.window.forest.find(m.id) for m in moved}
                self._emit("graduated", sorted(roots))
            reclustered = self.window.refine(RECLUSTER_SLICE_SECONDS, settle=settle)
            if reclustered:
                self._emit("reclustered", sorted(reclustered))
            await self.summarize_dirty(idle=idle, settle=settle)
            if self.window.refine_pending:
                self.kick()  # the next slice after this round, with turns let in between
        if not self.window.prepare_key_lines(RECLUSTER_SLICE_SECONDS):
            self.kick()

    async def summarize_dirty(self, *, idle: bool = False, settle: bool = False) -> int:
        jobs = self.window.summary_jobs(idle=idle, force=settle)
        if not jobs:
            return 0
        total = len(jobs)
        done: list[int] = []
        self._progress("begin", f"Summarizing {total} topic(s)", 0)
        try:
            for _ in range(MAX_ROUNDS):
                report = await resolve_round(
                    self.window,
                    self.summarizer,
                    idle=idle,
                    force=settle,
                    on_applied=lambda job, result: self._summarized(job.topic_id, done, total),
                )
                attempted = report.applied + report.stale + report.failed
                if attempted == 0 or (report.applied == 0 and report.failed):
                    break
                await asyncio.sleep(0)  # let chat turns in
        finally:
            self._changes += 1  # the flat fallback summary may have been refreshed too
            self._progress("end", f"Summarized {len(done)} topic(s)", 100)
        return len(done)

    def _summarized(self, topic_id: int, done: list[int], total: int) -> None:
        done.append(topic_id)
        self._emit("summarized", [topic_id])
        percentage = min(99, 100 * len(done) // max(1, total))
        self._progress("report", f"Summarized topic {topic_id}", percentage)

    def _emit(self, reason: str, ids: list[int] | None) -> None:
        self._changes += 1  # every topic change is announced here: renders may differ now
        if self.listener is not None:
            try:
                self.listener.topics_changed(self, reason, ids)
            except Exception:
                log.exception("topicsChanged listener failed")

    def _threads_changed(self, thread_id: str | None) -> None:
        if self.listener is not None:
            try:
                self.listener.threads_changed(self, thread_id)
            except Exception:
                log.exception("threadsChanged listener failed")

    def _progress(self, stage: ProgressStage, message: str, percentage: int) -> None:
        if self.listener is not None:
            try:
                self.listener.summarizing(self, stage, message, percentage)
            except Exception:
                log.exception("progress listener failed")


def _request(
    context: RenderedContext, user: Message, sent: list[SentAttachment]
) -> list[dict[str, str]]:
    """What the model receives: the system prompt, the rendered history, and the question
    last, carrying this turn's attachments after its text (a retried question that has left
    the hot zone is added again)."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, *context.messages]
    asked = bool(context.hot_message_ids) and context.hot_message_ids[-1] == user.id
    if asked and not sent:
        return messages
    content = messages.pop()["content"] if asked else user.content
    texts = [a.text for a in sent]
    messages.append(
        {"role": "user", "content": request_text(content, [a.ref for a in sent], texts)}
    )
    return messages


class OffLoopExtractive:
    """The offline summarizer in a worker thread: its CPU work never holds up the event loop
    (a round of big topics would otherwise delay the chat turns and requests arriving meanwhile)."""

    name = ExtractiveSummarizer.name

    def __init__(self) -> None:
        self.inner = ExtractiveSummarizer()

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return await asyncio.to_thread(self.inner.summarize_now, request)


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


def _close_soon(model: ChatModel) -> None:
    """Close a replaced chat model's connections once its running turns have had time to end."""
    with contextlib.suppress(RuntimeError):  # no running loop: it never opened a connection
        asyncio.get_running_loop().call_later(
            CHAT_TIMEOUT, lambda: asyncio.ensure_future(model.close())
        )


async def _through_cancel(future: asyncio.Future[None]) -> bool:
    """Await `future` to its end even if this task is cancelled meanwhile; whether it was."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
    future.result()
    return cancelled


def _log_task_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s died", task.get_name(), exc_info=task.exception())


_litellm_module: Any = None


async def warm_litellm() -> Any:
    """litellm, imported off the event loop the first time (it takes seconds and ~160 MB)."""
    global _litellm_module
    if _litellm_module is None:
        _litellm_module = await asyncio.to_thread(load_litellm)
    return _litellm_module


def model_window(model: str | None) -> int | None:
    """The chat model's input window, if litellm knows it (call off the event loop)."""
    if not model:
        return None
    from topicforest.engine.llm import max_input_tokens

    return max_input_tokens(model)
