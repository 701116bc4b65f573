"""Chat messages, their validation, and where their verbatim text lives."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from topicforest.engine.errors import InvalidMessage

Role = Literal["user", "assistant"]
ROLES: tuple[Role, ...] = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class Message:
    id: int
    thread_id: str
    role: Role
    content: str
    timestamp: float
    tokens: int
    cancelled: bool = False


def validate_content(content: object, max_chars: int) -> str:
    """Return `content` if it is usable chat text, else raise InvalidMessage."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidMessage("message is not valid UTF-8 text") from exc
    if not isinstance(content, str):
        raise InvalidMessage(f"message content must be a string, not {type(content).__name__}")
    if not content.strip():
        raise InvalidMessage("message is empty")
    if len(content) > max_chars:
        raise InvalidMessage(f"message has {len(content)} characters; the limit is {max_chars}")
    if "\x00" in content or _control_share(content) > 0.1:
        raise InvalidMessage("message looks like binary data, not text")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates
        raise InvalidMessage("message contains characters that are not valid UTF-8") from exc
    return content


def _control_share(text: str) -> float:
    sample = text[:4096]
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\n\r\t")
    return controls / len(sample)


def validate_role(role: object) -> Role:
    if role not in ROLES:
        raise InvalidMessage(f"role must be 'user' or 'assistant', not {role!r}")
    return role


class MessageLog(Protocol):
    """Verbatim message storage. The engine keeps only ids and counts; text lives here."""

    def next_id(self) -> int: ...
    def add(self, message: Message) -> None: ...
    def get(self, message_id: int) -> Message: ...
    def get_many(self, message_ids: Iterable[int]) -> list[Message]: ...
    def remove(self, message_ids: Iterable[int]) -> None: ...
    def __len__(self) -> int: ...


class InMemoryMessageLog:
    """The engine's default log, for tests, the demo and benchmarks."""

    def __init__(self) -> None:
        self._messages: dict[int, Message] = {}
        self._next = 1  # ids are never reused, even after a deletion

    def next_id(self) -> int:
        return self._next

    def add(self, message: Message) -> None:
        self._messages[message.id] = message
        self._next = max(self._next, message.id + 1)

    def remove(self, message_ids: Iterable[int]) -> None:
        for message_id in message_ids:
            self._messages.pop(message_id, None)

    def get(self, message_id: int) -> Message:
        return self._messages[message_id]

    def get_many(self, message_ids: Iterable[int]) -> list[Message]:
        return [self._messages[i] for i in message_ids]

    def __len__(self) -> int:
        return len(self._messages)
