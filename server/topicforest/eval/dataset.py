"""Conversations with topic labels and planted facts (the schema of ../shared/eval)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE = DATA / "sample_conversation.json"
# Written for this project by engineers who had not read the engine, after it was built (session
# 16): a check on conversations nobody tuned it on. Report their figures; never tune to them.
HELD_OUT = DATA / "held_out"


class DatasetError(ValueError):
    """A conversation file that does not follow the schema (the message says where)."""


@dataclass(frozen=True)
class LabelledMessage:
    index: int
    role: str
    topic: str | None  # None: chatter
    content: str
    thread: str | None = None  # the chat thread it belongs to (None: the conversation's one thread)


@dataclass(frozen=True)
class Fact:
    id: str
    topic: str | None
    msg_index: int
    superseded_msg_index: int | None
    question: str
    answer: str
    must_contain: tuple[str, ...]
    old_must_contain: tuple[str, ...] = ()  # optional: the superseded value, if the file says


@dataclass(frozen=True)
class Conversation:
    id: str
    project: str
    topics: dict[str, str]  # id -> name
    messages: tuple[LabelledMessage, ...]
    facts: tuple[Fact, ...]
    source: str = ""

    def threads(self) -> list[str | None]:
        """The conversation's threads in order of first message (`[None]`: a single thread)."""
        return list(dict.fromkeys(m.thread for m in self.messages))

    def position(self, fact: Fact) -> str:
        """'early', 'middle' or 'late': which third of the session states the fact."""
        third = 3 * fact.msg_index // max(1, len(self.messages))
        return ("early", "middle", "late")[min(2, third)]


def load_conversation(path: str | Path) -> Conversation:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read conversation: {exc}") from exc
    return parse_conversation(raw, str(path))


def parse_conversation(raw: Any, source: str = "<data>") -> Conversation:
    def fail(where: str, problem: str) -> DatasetError:
        return DatasetError(f"{source}: {where}: {problem}")

    if not isinstance(raw, dict):
        raise fail("top level", "must be an object")
    for key in ("id", "messages", "facts"):
        if key not in raw:
            raise fail(key, "missing")
    topics = {str(t["id"]): str(t.get("name", t["id"])) for t in raw.get("topics", [])}
    messages = []
    for position, m in enumerate(raw["messages"]):
        where = f"messages[{position}]"
        if not isinstance(m, dict) or m.get("index") != position:
            raise fail(where, f"index must be {position} (indices run 0..n-1 without gaps)")
        if m.get("role") not in ("user", "assistant"):
            raise fail(where, "role must be 'user' or 'assistant'")
        if not isinstance(m.get("content"), str) or not m["content"].strip():
            raise fail(where, "content must be non-empty text")
        topic = m.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise fail(where, "topic must be a topic id or null")
        thread = m.get("thread")
        if thread is not None and (not isinstance(thread, str) or not thread.strip()):
            raise fail(where, "thread must be a non-empty string when given")
        messages.append(LabelledMessage(position, m["role"], topic, m["content"], thread))
    facts = []
    for position, f in enumerate(raw["facts"]):
        where = f"facts[{position}]"
        try:
            index = int(f["msg_index"])
            must = tuple(str(s) for s in f["must_contain"])
            superseded = f.get("superseded_msg_index")
            fact = Fact(
                id=str(f["id"]),
                topic=f.get("topic"),
                msg_index=index,
                superseded_msg_index=None if superseded is None else int(superseded),
                question=str(f["question"]),
                answer=str(f.get("answer", "")),
                must_contain=must,
                old_must_contain=tuple(str(s) for s in f.get("old_must_contain", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise fail(where, f"malformed fact ({exc})") from exc
        if not 0 <= index < len(messages) or not must:
            raise fail(where, "msg_index out of range or must_contain empty")
        text = messages[index].content.lower()
        missing = [s for s in must if s.lower() not in text]
        if missing:
            raise fail(where, f"must_contain {missing} not in message {index}")
        facts.append(fact)
    return Conversation(
        id=str(raw["id"]),
        project=str(raw.get("project", "")),
        topics=topics,
        messages=tuple(messages),
        facts=tuple(facts),
        source=source,
    )


def held_out_paths() -> list[Path]:
    return sorted(HELD_OUT.glob("*.json"))


def default_paths(shared: Path) -> list[Path]:
    """Every conversation in the shared dev set (if present), then the bundled sample."""
    found = sorted(shared.glob("*.json")) if shared.is_dir() else []
    return [*found, SAMPLE]


def back_to_back(first: Conversation, second: Conversation) -> Conversation:
    """`first` then `second` as one conversation: a workspace whose memory outlives one
    subject's session. Topic labels, threads and fact ids are prefixed with each conversation's
    id so the two never share a label; facts point at their messages' new positions."""
    messages: list[LabelledMessage] = []
    facts: list[Fact] = []
    topics: dict[str, str] = {}
    for conv in (first, second):
        offset = len(messages)

        def label(name: str | None, conv: Conversation = conv) -> str | None:
            return None if name is None else f"{conv.id}/{name}"

        topics.update({f"{conv.id}/{t}": name for t, name in conv.topics.items()})
        messages += [
            replace(m, index=offset + m.index, topic=label(m.topic), thread=label(m.thread))
            for m in conv.messages
        ]
        facts += [
            replace(
                f,
                id=f"{conv.id}/{f.id}",
                topic=label(f.topic),
                msg_index=offset + f.msg_index,
                superseded_msg_index=(
                    None if f.superseded_msg_index is None else offset + f.superseded_msg_index
                ),
            )
            for f in conv.facts
        ]
    return Conversation(
        id=f"{first.id}+{second.id}",
        project=f"{first.project}+{second.project}",
        topics=topics,
        messages=tuple(messages),
        facts=tuple(facts),
        source=f"{first.source} + {second.source}",
    )


def back_to_back_pairs(conversations: Sequence[Conversation]) -> list[Conversation]:
    """Consecutive conversations joined in pairs (1st+2nd, 3rd+4th, …; an odd last one is left
    out): each pair holds twice the subjects a single conversation has."""
    pairs = zip(conversations[::2], conversations[1::2], strict=False)
    return [back_to_back(a, b) for a, b in pairs]
