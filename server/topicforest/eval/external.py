"""The external set: aider PR #4940's 17 conversations (`../shared/external/aider17`).

Written by others (see its SOURCE.md), so the memory is measured on work nobody here wrote. Each
conversation has 8 questions with an `expected_answer`; `answer_keys` turns one into the strings
a context must contain, by the rule of `../shared/external/README.md` (it agrees with the
upstream LLM judge on 89.5% of its verdicts). A question whose keys are not all in the
conversation itself cannot be answered from any context and is left out (3 of 136).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topicforest.eval.dataset import Conversation, DatasetError, Fact, LabelledMessage
from topicforest.eval.metrics import contains_all

EXTERNAL = Path(os.environ.get("TOPICFOREST_EXTERNAL_DIR", "../shared/external/aider17"))
# The published result (RESULTS.md): their judge on their own 2,048-token histories.
UPSTREAM = (("union-find", 54, 136), ("aider recursive", 56, 136))

SHORT_ANSWER_WORDS = 5
MAX_KEYS = 3
EDGE = ".,;:!?\"'`"  # punctuation stripped from a key's ends
ARTICLES = frozenset({"a", "an", "the"})
STOP_WORDS = frozenset(
    "a an the of in on at to for from by with and or not no is are was were be been has have "
    "had it its this that these those as into over under than then so do does did what which "
    "who whom when where why how".split()
)
QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|`([^`]+)`")
IDENTIFIER_INSIDE = set("_./#=():-")


def answer_keys(answer: str) -> tuple[str, ...]:
    """The README's rule: at most 5 words are one key, the whole phrase (a leading article and
    edge punctuation stripped, a plain last word longer than 4 letters without a plural "s");
    a longer answer gives at most 3 keys: quoted spans whole, then identifier-like tokens, then
    the longest plain words (stop words dropped, plural "s" dropped as above)."""
    words = answer.split()
    if not words:
        return ()
    if len(words) <= SHORT_ANSWER_WORDS:
        if len(words) > 1 and words[0].lower() in ARTICLES:
            words = words[1:]
        last = _strip(words[-1])
        if last.isalpha():
            words[-1] = _singular(last)
        return (_strip(" ".join(words)),)
    keys = [next(g for g in m.groups() if g) for m in QUOTED.finditer(answer)]
    tokens = [_strip(t) for t in QUOTED.sub(" ", answer).split()]
    keys += [t for t in dict.fromkeys(tokens) if _identifier(t) and t not in keys]
    plain = [t for t in dict.fromkeys(tokens) if not _identifier(t) and t.lower() not in STOP_WORDS]
    keys += [_singular(w) for w in sorted(plain, key=len, reverse=True)]  # stable: first wins ties
    return tuple(keys[:MAX_KEYS])


def _strip(token: str) -> str:
    return token.strip(EDGE) or token


def _singular(word: str) -> str:
    """A plain word longer than 4 letters loses a plural "s" ("files", not "class")."""
    plural = word.isalpha() and len(word) > 4 and word.endswith("s") and not word.endswith("ss")
    return word[:-1] if plural else word


def _identifier(token: str) -> bool:
    """A digit, or `_ . / # = ( ) : -` inside, or an inner capital."""
    return (
        any(c.isdigit() for c in token)
        or any(c in IDENTIFIER_INSIDE for c in token[1:-1])
        or any(c.isupper() for c in token[1:])
    )


@dataclass(frozen=True)
class Unanswerable:
    conversation: str
    question: str  # its id
    answer: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class ExternalSet:
    conversations: list[Conversation]  # facts: the answerable questions only
    questions: int  # all questions, answerable or not
    unanswerable: list[Unanswerable]

    @property
    def answerable(self) -> int:
        return sum(len(c.facts) for c in self.conversations)


def missing(root: Path = EXTERNAL) -> str | None:
    """Why the external set cannot be evaluated (None: it is there)."""
    if not (root / "conversations" / "questions").is_dir():
        return f"{root} not found (the external set lives in ../shared/external)"
    return None


def load_external(root: Path = EXTERNAL) -> ExternalSet:
    """Every conversation under `root/conversations` with its questions; raises DatasetError."""
    conversations: list[Conversation] = []
    unanswerable: list[Unanswerable] = []
    questions = 0
    for path in sorted((root / "conversations").glob("*.json")):
        raw = _read(path)
        conv_id = str(raw.get("id", path.stem)) if isinstance(raw, dict) else path.stem
        asked = _read(root / "conversations" / "questions" / f"{conv_id}.json")
        conv, lost = parse_external(raw, asked, str(path))
        conversations.append(conv)
        unanswerable += lost
        questions += len(asked)
    if not conversations:
        raise DatasetError(f"{root}/conversations: no conversation files")
    return ExternalSet(conversations, questions, unanswerable)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc


def parse_external(
    raw: Any, asked: Any, source: str = "<data>"
) -> tuple[Conversation, list[Unanswerable]]:
    """One conversation (`{id, messages: [{role, content}]}`) and its question list."""
    if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list) or "id" not in raw:
        raise DatasetError(f"{source}: must be an object with `id` and a `messages` list")
    if not isinstance(asked, list):
        raise DatasetError(f"{source}: its questions must be a list")
    messages = []
    for index, m in enumerate(raw["messages"]):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise DatasetError(f"{source}: messages[{index}]: role must be 'user' or 'assistant'")
        if not isinstance(m.get("content"), str) or not m["content"].strip():
            raise DatasetError(f"{source}: messages[{index}]: content must be non-empty text")
        messages.append(LabelledMessage(index, m["role"], None, m["content"]))
    conv_id = str(raw["id"])
    facts: list[Fact] = []
    lost: list[Unanswerable] = []
    whole = "\n".join(m.content for m in messages)
    for position, q in enumerate(asked):
        try:
            qid, question, answer = str(q["id"]), str(q["question"]), str(q["expected_answer"])
        except (KeyError, TypeError) as exc:
            raise DatasetError(f"{source}: questions[{position}]: malformed ({exc})") from exc
        keys = answer_keys(answer)
        if not keys or not contains_all(whole, keys):
            lost.append(Unanswerable(conv_id, qid, answer, keys))
            continue
        facts.append(Fact(qid, None, _where(messages, keys), None, question, answer, keys))
    conversation = Conversation(
        id=conv_id,
        project=str(raw.get("repo", "")),
        topics={},
        messages=tuple(messages),
        facts=tuple(facts),
        source=source,
    )
    return conversation, lost


def _where(messages: list[LabelledMessage], keys: tuple[str, ...]) -> int:
    """The message that states the answer: the first holding every key, else the first by
    which all keys have appeared (for the trace and the early/middle/late split only)."""
    for m in messages:
        if contains_all(m.content, keys):
            return m.index
    seen: set[str] = set()
    for m in messages:
        seen |= {k for k in keys if contains_all(m.content, [k])}
        if len(seen) == len(keys):
            return m.index
    return len(messages) - 1
