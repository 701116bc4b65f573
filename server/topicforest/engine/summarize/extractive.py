"""The offline summarizer: no network, deterministic, keeps the facts code conversations hinge on.

A summary a person reads (`Digest.summary`) is short first-person sentences in conversation order:
a lead saying what the topic is about, the most information-dense sentences (those naming files,
identifiers, versions, numbers, flags, settings, URLs), then the sentences that name what is not
covered yet, cheapest per new name first. Code is never pasted: a block's names are said in one
sentence ("You showed app/db.py with `pool_size=20` and `QueuePool`.").

A render's cut (`Digest.select`, what the model receives when a summary must shrink to its share)
is denser: sentences, then every named thing not yet covered, first the one each sentence names
first, newest sentence first, then the second of each, so a small cut still touches the whole text.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from topicforest.engine.embedding import is_file_path, is_symbol
from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import SummaryRequest, SummaryResult
from topicforest.engine.summarize.readable import looks_like_code, readable
from topicforest.engine.tokens import estimate_tokens

CACHED_TEXT = 600  # characters: longer sentences are rare and not worth keeping around
# characters: a message's sentences are remembered up to this size (1,024 of them: at most ~8 MB)
CACHED_MESSAGE = 8_000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])")
_ENTITY = re.compile(
    r"\b[a-z][a-z0-9+.-]*://[^\s`'\"<>()\[\]]+"  # URLs, whole (host, port and path together)
    r"|(?<![\w-])--?[A-Za-z][\w-]+(?:=[^\s`'\"]+)?"  # flags (not the tail of "hand-written")
    r"|\b[A-Za-z_][\w.]*=[\w.+-]*\w"  # settings: num_workers=6, atol=1e-6
    r"|\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B|ms|px)\b"  # quantities with their unit: 6.8 GB, 320px
    r"|\bv?\d+(?:\.\d+)+\b"  # versions
    r"|\b\d{1,3}(?:,\d{3})+\b"  # 43,200 (not "43" and "200")
    r"|\b\d{2,}[\w%]*\b"  # numbers, ports, sizes
    r"|[\w.-]*[/.][\w./-]*\w"  # paths, dotted names
    r"|\b[a-z][a-z0-9]*(?:-[a-z0-9]+){2,}\b"  # kebab-case names: pw-prod-monthly, gha-tf-plan
    r"|(?<=[`\"'])[a-z][a-z0-9]*-[a-z0-9-]*[a-z0-9](?=[`\"'])"  # quoted: `django-filter`
    r"|\b[A-Za-z_]\w*(?:_\w+|[a-z][A-Z]\w*)\b"  # snake_case / camelCase
    r"|\b[A-Z][A-Z0-9_]{2,}\b"  # CONSTANTS, ENV_VARS
)


# `.github/workflows/ci.yml`, `.env`, `./run.sh`, `../lib`: the dot is part of the name
_DOT_PATH = re.compile(r"\.\.?/|\.[A-Za-z]")


def entities(text: str) -> tuple[str, ...]:
    """The named things in `text`, in order (remembered for short texts: a render that rebuilds
    a digest meets the same sentences again)."""
    return _short_entities(text) if len(text) <= CACHED_TEXT else _entities(text)


@functools.lru_cache(maxsize=2048)
def _short_entities(text: str) -> tuple[str, ...]:
    return _entities(text)


def _entities(text: str) -> tuple[str, ...]:
    found = []
    for match in _ENTITY.findall(text):
        token = match.strip(",:;()").rstrip(".")
        if token.startswith(".") and not _DOT_PATH.match(token):
            token = token.lstrip(".")  # an ellipsis, not a dotfile or a relative path
        if len(token) < 2:
            continue
        if (
            ("/" in token or "." in token)
            and not (
                "://" in token  # URLs are kept whole
                or is_file_path(token)
                or is_symbol(token)
                or token[:1].isdigit()
                or token[1:2].isdigit()
            )
        ):
            continue
        found.append(token)
    return tuple(found)


def _lead_names(names: Sequence[str], count: int = 3) -> list[str]:
    """The names a lead opens with: the most mentioned files, then code names, then other
    words; numbers, flags and URLs only when nothing else is named ("about app/db.py,
    QueuePool", not "about API, 60")."""
    ranked = [n for n, _ in Counter(names).most_common()]
    files = [n for n in ranked if is_file_path(n)]
    code = [n for n in ranked if is_symbol(n) and n not in files]
    taken = {*files, *code}
    words = [n for n in ranked if n[:1].isalpha() and "://" not in n and n not in taken]
    return (files + code + words)[:count] or ranked[:count]


def _sentences(text: str) -> list[str]:
    return [sentence for sentence, _ in _units(text)]


class Unit(NamedTuple):
    """A sentence or code line of a message, with what a digest reads of it."""

    sentence: str
    block: int  # -1 for prose, else its code block's number
    names: tuple[str, ...]  # `entities`
    distinct: int  # how many different things it names
    tokens: int


def _message_units(text: str) -> Sequence[Unit]:
    """The `Unit`s of a message, remembered: a render rebuilds the digest of a dirty topic
    after each graduation into it, and cutting the same messages into sentences and finding
    their names again (the per-sentence cache of `entities` is too small for a topic's worth)
    was most of a slow turn's CPU time."""
    return _cached_units(text) if len(text) <= CACHED_MESSAGE else _read_units(text)


@functools.lru_cache(maxsize=1024)
def _cached_units(text: str) -> tuple[Unit, ...]:
    return tuple(_read_units(text))


def _read_units(text: str) -> list[Unit]:
    return [_unit(sentence, block) for sentence, block in _units(text)]


def _unit(sentence: str, block: int = -1) -> Unit:
    names = entities(sentence)
    return Unit(sentence, block, names, len(set(names)), estimate_tokens(sentence))


def _units(text: str) -> list[tuple[str, int]]:
    """Sentences of prose and the lines of code that name something, each with its block: -1
    for prose, else the number of the code block it belongs to (a fenced block, or a run of
    lines that read as code)."""
    out: list[tuple[str, int]] = []
    in_fence = False
    block = 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            block += 1
            continue
        if not stripped:
            continue
        if in_fence or looks_like_code(stripped):
            if entities(stripped):
                out.append((stripped.strip("` "), block))
            continue
        block += 1
        parts = _SENTENCE_END.split(stripped.lstrip("#>*- "))
        out.extend((part.strip(), -1) for part in parts if part.strip())
    return out


SENTENCE_SHARE = 0.5
LEAD = "I asked you about"
ALSO = "Also mentioned:"


class Digest:
    """A text cut into scored sentences and named things, ready to be cut to any size quickly."""

    def __init__(
        self,
        previous_summary: str | None,
        messages: Sequence[Message],
        known: str = "",
        earlier: int = 0,
    ) -> None:
        """`known`: text the reader sees anyway (a render's topic header): its names are not
        offered again. `earlier`: how many of `messages` (the first ones) came before what
        `previous_summary` tells (`SummaryRequest.earlier`): their sentences go first."""
        units: list[tuple[str, str]] = []  # (speaker prefix, sentence)
        read: list[Unit] = []  # the same units, as read
        seen: set[str] = set()  # a line said twice (a code line quoted again) says nothing new
        self.sources: list[tuple[int, int]] = []  # per unit: (message, code block or -1)

        def add(speaker: str, unit: Unit, source: tuple[int, int] = (-1, -1)) -> None:
            if unit.sentence not in seen:
                seen.add(unit.sentence)
                units.append((speaker, unit.sentence))
                read.append(unit)
                self.sources.append(source)

        told = _sentences(previous_summary or "")
        # our own lists of names: each name a mention of its own, and older than the sentences
        # that summary kept
        listed = [
            [name]
            for sentence in told
            if sentence.startswith(ALSO)
            for name in sentence[len(ALSO) :].rstrip(".").split(", ")
        ]

        def add_messages(numbers: range) -> None:
            for number in numbers:
                message = messages[number]
                speaker = "I said" if message.role == "user" else "You said"
                for unit in _message_units(message.content):
                    add(speaker, unit, (number, unit.block))

        first = min(max(earlier, 0), len(messages))
        add_messages(range(first))  # in conversation order: what came before the summary
        for sentence in told:
            if not sentence.startswith((ALSO, LEAD)):  # the lead is written anew below
                add("", _unit(sentence))
        add_messages(range(first, len(messages)))
        n = len(units)
        found = [unit.names for unit in read]  # what each sentence names
        mentions: list[Sequence[str]] = [*listed, *found]
        scored = []
        for position, unit in enumerate(read):
            recency = 0.5 * position / max(1, n - 1)
            density = unit.distinct / (1 + unit.tokens / 25)
            scored.append((unit.distinct + density + recency, position))
        self.units = units
        self.costs = [estimate_tokens(f"{speaker}: {sentence}") + 1 for speaker, sentence in units]
        self.ranked = [position for _, position in sorted(scored, reverse=True)]
        self.named = [bool(ents) for ents in found]
        known = known.lower()
        self.entities = _spread(
            [[e for e in ms if e.lower() not in known and not _bare_number(e)] for ms in mentions]
        )
        self.entity_costs = [estimate_tokens(e) + 1 for e in self.entities]
        # what `select` needs again and again
        self.lower_entities = [e.lower() for e in self.entities]
        self.least_cost = min(self.costs, default=0)
        self.least_entity_cost = min(self.entity_costs, default=0)
        self.names = [e for ms in mentions for e in ms]
        self.first_seen = {e: i for i, e in enumerate(dict.fromkeys(self.names))}
        self.found = found

    @functools.cached_property
    def lead(self) -> str:
        """What the topic is about, for a summary shown on its own (a render's cut has none):
        its two most named things, in a sentence."""
        names: list[str] = []
        for name in _lead_names(self.names, 4):  # not `fonts/a.ttf` after `static/fonts/a.ttf`
            if len(names) < 2 and not any(name in n or n in name for n in names):
                names.append(name)
        return f"{LEAD} {' and '.join(names)}." if names else f"{LEAD} this."

    def summary(self, target_tokens: int) -> str:
        """What a person reads: first person, as the user, in short sentences: the lead, the
        densest sentences, then those naming what is not covered yet (a code block's names in a
        sentence of their own), in conversation order. Never a list of names, never code."""
        return " ".join([self.lead, *readable(self, target_tokens - estimate_tokens(self.lead))])

    def select(self, target_tokens: int, sentence_share: float = SENTENCE_SHARE) -> str:
        """Half the room for the densest sentences, then every named thing not yet covered,
        then sentences again with what is left; sentences keep their conversation order.

        A sentence that names nothing ("Cool.", "Agreed.") only gets room that is left over."""
        budget = max(16, target_tokens)
        used = 0
        chosen: set[int] = set()
        costs, named = self.costs, self.named

        def take_sentences(limit: int, *, named_only: bool) -> None:
            nonlocal used
            for position in self.ranked:
                if limit - used < self.least_cost:
                    break  # nothing fits any more (a render cuts a long digest small)
                if named_only and not named[position]:
                    continue
                if position not in chosen and used + costs[position] <= limit:
                    chosen.add(position)
                    used += costs[position]

        take_sentences(int(budget * sentence_share), named_only=True)
        covered = " ".join(self.units[i][1] for i in chosen).lower()
        missing: list[str] = []
        for ent, lower, cost in zip(
            self.entities, self.lower_entities, self.entity_costs, strict=True
        ):
            if budget - used < self.least_entity_cost:
                break
            if used + cost <= budget and lower not in covered:
                missing.append(ent)
                covered += " " + lower
                used += cost
        take_sentences(budget, named_only=False)
        lines = [
            f"{u[0]}: {u[1]}" if u[0] else u[1] for u in map(self.units.__getitem__, sorted(chosen))
        ]
        text = " ".join(lines)
        if missing:
            missing.sort(key=self.first_seen.__getitem__)  # in conversation order
            text += (" " if text else "") + f"{ALSO} " + ", ".join(missing) + "."
        return text


def _bare_number(name: str) -> bool:
    """ "14", "06": a number of one or two digits alone names nothing (a list of them read as
    noise in the renders' cut summaries); a port, a year or a version still does."""
    return len(name) <= 2 and name.isdigit()


def _spread(found: Sequence[Sequence[str]]) -> list[str]:
    """Every named thing once, in the order a small cut should keep them: the first thing each
    sentence names, newest sentence first, then each sentence's second, and so on.

    A cut then covers the whole text (all of a topic's history, not only its latest exchange)
    before it spends room on a second detail of any one sentence; newest first within a round
    keeps a later value ahead of the one it superseded.
    """
    queues = [list(dict.fromkeys(ents)) for ents in reversed(found)]
    order: dict[str, None] = {}
    for depth in range(max(map(len, queues), default=0)):
        for names in queues:
            if depth < len(names):
                order.setdefault(names[depth], None)
    return list(order)


class ExtractiveSummarizer:
    name = "offline-extractive"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return self.summarize_now(request)

    def summarize_now(self, request: SummaryRequest) -> SummaryResult:
        """Synchronous core, also used where no event loop is running."""
        digest = Digest(request.previous_summary, request.messages, earlier=request.earlier)
        summary = digest.summary(request.target_tokens) if digest.units else _fallback(request)
        return SummaryResult(
            text=summary,
            model=self.name,
            input_tokens=estimate_tokens(request.transcript()),
            output_tokens=estimate_tokens(summary),
        )


def _fallback(request: SummaryRequest) -> str:
    """Messages with nothing to pick (nothing named, no sentence): what they were, not their
    text (it may be code)."""
    if request.previous_summary:
        return request.previous_summary
    return f"{LEAD} this." if request.messages else f"{LEAD} nothing yet."
