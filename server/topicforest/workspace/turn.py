"""The chat turn: append the question, render, stream the model's answer, store it.

Its critical path (receipt to the request's first byte leaving) holds only the append (one
commit, fsynced off the loop once the request is out), the render and the send; the send gate
keeps upkeep out of it (docs/architecture.md, "The chat turn").
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from topicforest.attachments import (
    Attachment,
    AttachmentRef,
    SentAttachment,
    fit,
    request_text,
    user_text,
    with_references,
)
from topicforest.engine import Message
from topicforest.engine.render import RenderedContext
from topicforest.workspace.chat_model import ChatModelError, Usage
from topicforest.workspace.errors import ChatNotConfigured, NotRetryable, ProviderError
from topicforest.workspace.gate import SendGate
from topicforest.workspace.model_check import in_words
from topicforest.workspace.models import Models
from topicforest.workspace.session import StoreSession
from topicforest.workspace.settings import Settings

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are a coding assistant inside the user's editor. Earlier conversation may be given as "
    "topic memory; use it when relevant and say so when you need details you cannot see."
)


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


class Append(Protocol):
    def __call__(
        self, thread_id: str, role: str, content: object, *, cancelled: bool = ..., wake: bool = ...
    ) -> Message: ...


class Render(Protocol):
    def __call__(
        self,
        query: str | None = ...,
        active_file: str | None = ...,
        thread_id: str | None = ...,
        *,
        upto: int | None = ...,
    ) -> RenderedContext: ...


class Sending:
    """A turn's hold on the send gate, from its receipt until its request leaves (`out`) or the
    turn ends without sending (`end`); records the critical path."""

    def __init__(self, gate: SendGate, record: Callable[[float], None]) -> None:
        self.received = self.appended = self.rendered = time.perf_counter()
        self.cpu = time.thread_time()  # wall time far above CPU time: waiting, not working
        self.sent = self.sent_at = 0.0
        self.gate = gate
        self.record = record
        self.held = True
        gate.enter()

    def out(self) -> None:
        self.sent, self.sent_at = time.perf_counter(), time.time()
        self.cpu = time.thread_time() - self.cpu
        self.record(self.sent - self.received)
        self.end()

    def end(self) -> None:
        if self.held:
            self.held = False
            self.gate.leave()


class ChatTurns:
    def __init__(
        self,
        session: Callable[[], StoreSession],
        settings: Callable[[], Settings],
        models: Models,
        gate: SendGate,
        append: Append,
        render: Render,
        kick: Callable[[], None],
    ) -> None:
        self.session = session
        self.settings = settings
        self.models = models
        self.gate = gate
        self.append = append
        self.render = render
        self.kick = kick  # wakes upkeep
        # seconds from receiving a chat turn to its request's first bytes leaving for the model
        self.critical_path: deque[float] = deque(maxlen=1000)

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
        """One turn (see `WorkspaceMemory.chat`)."""
        sending = Sending(self.gate, self.critical_path.append)
        try:
            return await self._chat(
                sending, thread_id, turn_id, text, active_file, on_delta, attachments, model,
                retry_of,
            )  # fmt: skip
        finally:
            sending.end()

    async def _chat(
        self,
        sending: Sending,
        thread_id: str,
        turn_id: str,
        text: str,
        active_file: str | None,
        on_delta: Callable[[int, str], None],
        attachments: list[Attachment] | None,
        model: str | None,
        retry_of: int | None,
    ) -> ChatOutcome:
        settings = self.settings()
        model = model or settings.chat_model
        if not model:
            raise ChatNotConfigured()
        chat_model = self.models.for_turn(model)
        session = self.session()
        session.check_owner(thread_id)  # before anything is stored or sent
        if retry_of is not None:
            user = self._retry_target(session, thread_id, retry_of)
            carried = session.attachments.sent(user.id)
        else:
            # off the loop: fitting 20 attachments of 200,000 characters is real work
            carried = (
                await asyncio.to_thread(
                    fit, attachments, settings.attachment_budget, session.window.count
                )
                if attachments
                else []
            )
            with session.unsynced(), session.appending():  # fsync overlaps the model call
                user = self.append(
                    thread_id, "user", with_references(text, [a.ref for a in carried]), wake=False
                )
                session.attachments.add(user.id, carried)
        refs = [a.ref for a in carried]
        sending.appended = time.perf_counter()
        context = self.render(
            query=user_text(user.content, refs),
            active_file=active_file,
            thread_id=thread_id,
            upto=user.id if retry_of is not None else None,
        )
        messages = request_messages(context, user, carried)
        sending.rendered = time.perf_counter()
        parts: list[str] = []
        usage: Usage | None = None
        cancelled = False
        synced: asyncio.Future[None] | None = None
        room = session.window.config.max_message_chars  # what a reply can be stored with
        try:
            async for delta, piece_usage in chat_model.stream(messages, sending.out):
                usage = piece_usage or usage
                if synced is None:  # the request is out: disk and upkeep may have their turn
                    synced = asyncio.ensure_future(session.sync())
                    self.kick()
                if delta:
                    room -= len(delta)
                    if room < 0:  # an endless stream is not held without bound
                        raise ChatModelError(
                            "the reply went past the longest a message can be "
                            f"({session.window.config.max_message_chars} characters)"
                        )
                    on_delta(len(parts), delta)
                    parts.append(delta)
        except asyncio.CancelledError:
            cancelled = True
        except Exception as exc:
            self._store_reply(session, user, parts, cancelled=True)  # keep what did arrive
            raise ProviderError(in_words(exc, chat_model)) from exc
        finally:
            sending.end()  # failed or cancelled before its request left: upkeep may go on
            self.kick()
            # The question must be on disk before any answer; a cancel arriving meanwhile (the
            # stream just ended) must not skip storing the reply the user has already seen.
            if await _through_cancel(synced or asyncio.ensure_future(session.sync())):
                cancelled = True
        reply = self._store_reply(session, user, parts, cancelled=cancelled)
        if sending.sent:
            log.debug(
                "turn %s: %.3f ms from receipt to the first byte sent at %.6f"
                " (append %.3f ms, render %.3f ms, send %.3f ms; on CPU %.3f ms)",
                turn_id,
                1000 * (sending.sent - sending.received),
                sending.sent_at,  # wall clock, so a benchmark can time the pipe in front of us
                1000 * (sending.appended - sending.received),
                1000 * (sending.rendered - sending.appended),
                1000 * (sending.sent - sending.rendered),
                1000 * sending.cpu,
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

    @staticmethod
    def _retry_target(session: StoreSession, thread_id: str, message_id: int) -> Message:
        last = session.last_user_message(thread_id)
        if last is None or last != message_id:
            raise NotRetryable(
                f"message {message_id} is not the last user message of thread {thread_id!r}"
                + (f" (that is {last})" if last is not None else " (it has none)")
            )
        return session.window.log.get(message_id)

    def _store_reply(
        self, session: StoreSession, user: Message, parts: list[str], *, cancelled: bool
    ) -> Message | None:
        """Store the reply to `user`, unless its thread was deleted meanwhile (by this window or
        another): a reply stored then would bring the thread back, an orphan, into topics."""
        text = "".join(parts)
        if not text.strip():
            return None
        limit = session.window.config.max_message_chars
        with session.transaction():  # checked and stored in one write transaction
            if user.id not in session.thread_message_ids(user.thread_id):
                log.info("thread %r was deleted while it was answered", user.thread_id)
                return None
            return self.append(user.thread_id, "assistant", text[:limit], cancelled=cancelled)


def request_messages(
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
