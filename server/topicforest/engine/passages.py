"""Passage-level recall: the lines or sentences of a long message that answer a query.

A 600-token paste cannot come back whole inside a 2,048-token budget, but the two lines of it the
question is about can. A message is cut into passages (prose sentences; code, log and config
lines one by one, each remembering the file its fenced block names) and an excerpt keeps the
passages that share the query's words (IDF-weighted, on light stems so `entities` meets
`entity`), then the ones that state values, in their original order with `…` between gaps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat

from topicforest.engine.answer_types import Values, states
from topicforest.engine.embedding import chunk_terms, chunks, is_file_path
from topicforest.engine.tokens import TokenCounter

GAP = " … "
FENCE = "```"
OMITTED = " [… more lines in the original]"
# How a quoted code block names its file, on a line of its own before the block (`condense`)
# or before its first line (`excerpt`); the offline summarizer reads the line form back.
FILE_LABEL = re.compile(r"\(([^\s()]+)\)")
VALUE_BONUS = 0.8  # of the best query match: a line stating a value beats a bare mention
FILE_CONTEXT_BONUS = 0.25
NEIGHBOUR_SHARE = 0.4  # a line next to a matching one
NEIGHBOURS = 2  # how far that reaches (the share halves with each step)
DENSITY = 0.5  # how much a long passage's cost counts against it
OPENER_WORDS = 6
# A message this short that fits comes back whole. A longer one is cut even when its room would
# hold it: a reply is offered its exchange's whole share, and what an excerpt leaves of it goes
# to the next exchange (returning every message that fit whole lost 6 facts of 334 on the dev set).
WHOLE_MESSAGE = 128
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z`\"'(\[])")
# A value: an assignment or key, a number (decimal; hex as `0x31` or a hash, id or UUID part
# mixing digits and letters, `8e4f0001`), an option.
VALUE = re.compile(
    r"[=:]\s*\S|\b\d[\d_.,]*\b|--?[a-z][\w-]+"
    r"|\b0[xX][0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]{6,}\b)[a-fA-F]*\d[0-9a-fA-F]*\b"
)
# A code line that defines something states its name as a value line states a value
# (`class ProcessedStripeEvent(models.Model):`, `def on_payment_intent_succeeded(event):`): a
# question about what it does is often answered by that name. (With a query, dev 310 -> 312 of
# 334, the worst conversation 77% -> 80%; at 1,024 tokens 272 -> 273, at 4,096 320 -> 321;
# external and held-out unchanged.) Kotlin's `fun`/`data class`/`object` and Elixir's `defp`/
# `defmodule` too: held-out with a query 102 -> 103 of 120 (a Kotlin test asked for by name),
# dev, external and the other budgets unchanged.
DEFINITION = re.compile(
    r"\s*(?:(?:export|pub|public|private|protected|internal|static|async|abstract|final|inline"
    r"|constexpr|override|open|suspend|data|sealed)\s+)*"
    r"(?:class|def|defp|defmodule|defmacro|fn|fun|func|function|struct|interface|enum|trait|impl"
    r"|type|protocol|extension|module|object)"
    r"\s+[A-Za-z_(]"
)
_PATH_WORD = re.compile(r"[\w./-]+")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d+[.)])\s")  # "- Pin lxml", "2. Retry"
_SUFFIXES = "ations ation ating ated ates ings ing ies ied ers er ed es s".split()


@dataclass(frozen=True, slots=True)
class Passage:
    text: str
    code: bool  # a line of a fenced block (else a prose sentence)
    file: str | None  # the file the passage's block or sentence names, if any


@lru_cache(maxsize=8192)  # a render stems its question's ~30 terms; they recur
def stem(word: str) -> str:
    """A light suffix strip: enough for `iterating`/`iteration`, `entities`/`entity`."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def stem_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """A query's term weights by stem (the best of the terms sharing one), as `excerpt` reads
    them."""
    by_stem: dict[str, float] = {}
    for term, weight in weights.items():
        key = stem(term)
        by_stem[key] = max(by_stem.get(key, 0.0), weight)
    return by_stem


def stems(text: str) -> frozenset[str]:
    """A passage's terms, stemmed (remembered per message by `_scan`)."""
    return _NO_STEMS.union(*map(_chunk_stems, chunks(text)))


_NO_STEMS: frozenset[str] = frozenset()


@lru_cache(maxsize=8192)  # words recur (as for `chunk_terms`): their stems are kept here
def _chunk_stems(chunk: str) -> frozenset[str]:
    return frozenset(map(stem, chunk_terms(chunk)))


@lru_cache(maxsize=512)  # the messages a render excerpts recur from turn to turn
def split_passages(text: str) -> tuple[Passage, ...]:
    """Sentences of prose and single lines of fenced blocks, in order."""
    return tuple(_split(text))


def _split(text: str) -> list[Passage]:
    out: list[Passage] = []
    block: list[Passage] = []
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            if in_fence:
                out += _name_block(block)
                block = []
            in_fence = not in_fence
            continue
        if not stripped:
            continue
        if in_fence:
            block.append(Passage(stripped, True, None))
            continue
        for sentence in _SENTENCE_END.split(stripped):
            if sentence.strip():
                out.append(Passage(sentence.strip(), False, _named_file(sentence)))
    return out + _name_block(block)


def _name_block(block: list[Passage]) -> list[Passage]:
    """A fenced block's lines, each with the file its header comment names (`// app/db.py`;
    a shebang's `/usr/bin/env` is no file of the project)."""
    head = next(
        (p.text for p in block[:2] if not p.text.startswith("#!") and _named_file(p.text)), None
    )
    name = _named_file(head) if head is not None else None
    return [Passage(p.text, True, name) for p in block]


def _named_file(text: str) -> str | None:
    word: str
    for word in _PATH_WORD.findall(text):
        if ("/" in word or "." in word) and is_file_path(word.strip(".")):
            return word.strip(".")
    return None


def excerpt(
    text: str,
    query_stems: Mapping[str, float],
    max_tokens: int,
    count: TokenCounter,
    values: Values = (),
) -> str:
    """The passages of `text` that best answer the query, within `max_tokens`, in order.

    `query_stems`: stem -> weight (the query term's IDF). Passages with no query word and no
    value are left out; if none matches at all, the excerpt is empty. A short message that fits
    comes back whole, and an opener ("Good catch.") comes with the passage after it or not at
    all: alone it says nothing."""
    scan = _scan(text)
    passages = scan.passages
    get = query_stems.get
    matches = [sum(map(get, terms, repeat(0.0))) for terms in scan.stems]
    best = max(matches, default=0.0)
    if best <= 0:
        return ""
    if count(text) <= min(max_tokens, WHOLE_MESSAGE):
        return text
    costs = scan.costs(count)
    if costs.least > max_tokens:  # nothing can be taken (a small room tries many exchanges)
        return ""
    sizes = costs.sizes
    ranked: list[tuple[bool, float, int, int]] = []
    for position, match in enumerate(matches):
        if not scan.stems[position]:  # a list marker ("1.") or a bracket line says nothing
            continue
        passage = passages[position]
        if not match:  # the line or sentence next to a matching one often holds its value
            match = NEIGHBOUR_SHARE * max(
                (
                    matches[p] / (1 + abs(p - position) - 1)
                    for p in range(position - NEIGHBOURS, position + NEIGHBOURS + 1)
                    if 0 <= p < len(matches) and p != position and passages[p].code == passage.code
                ),
                default=0.0,
            )
        value = VALUE_BONUS * best if scan.values[position] else 0.0
        context = FILE_CONTEXT_BONUS * best if passage.file and match else 0.0
        if match or value:
            # by worth per token: two short lines that each answer beat one long one
            worth = (match + value + context) / sizes[position] ** DENSITY
            # a line stating the kind of value asked for ("how big": "6.8 GB") goes first
            asked = bool(match) and states(passage.text, values)
            ranked.append((asked, worth, -position, position))
    ranked.sort(reverse=True)
    chosen: list[list[int]] = []  # best first, an opener with the passage after it
    taken_positions: set[int] = set()
    used = 0
    files: set[str] = set()
    for *_, position in ranked:
        if position in taken_positions:
            continue
        passage = passages[position]
        taken = [position]
        cost = sizes[position] + 1
        after = position + 1
        if scan.openers[position] and after < len(passages) and after not in taken_positions:
            taken.append(after)
            cost = costs.joined[position] + 1
            passage = passages[after]
        if passage.code and passage.file and passage.file not in files:
            cost += costs.files[taken[-1]]  # the file it comes from, said once
        if used + cost > max_tokens:
            continue
        chosen.append(taken)
        taken_positions.update(taken)
        used += cost
        if passage.code and passage.file:
            files.add(passage.file)
    return _fitted(chosen, max_tokens, count, lambda positions: _join(passages, positions))


def _fitted(
    chosen: list[list[int]],
    max_tokens: int,
    count: TokenCounter,
    join: Callable[[list[int]], str],
) -> str:
    """The `chosen` passages (best first) joined in order by `join`, the worst left out until
    the joined text fits: the gaps between them cost tokens too, and an excerpt that overran
    its room was dropped whole by its caller (76 of 7,757 excerpts on the dev set)."""
    while chosen:
        text = join(sorted(p for taken in chosen for p in taken))
        if count(text) <= max_tokens:
            return text
        chosen = chosen[:-1]
    return ""


@dataclass(frozen=True, slots=True)
class _Costs:
    """A text's passages priced by one token counter, as `excerpt` prices them."""

    sizes: tuple[int, ...]  # each passage's tokens
    joined: tuple[int, ...]  # an opener's with the passage after it (else its own)
    files: tuple[int, ...]  # what naming a code line's file adds (else 0)
    least: int  # the least a first passage taken costs: a room below it takes nothing


@dataclass(frozen=True, slots=True, eq=False)
class _Scan:
    """What `excerpt` reads of a text's passages whatever the query: their stems, whether each
    states a value (or defines a name), whether each is an opener; and their costs."""

    passages: tuple[Passage, ...]
    stems: tuple[frozenset[str], ...]
    values: tuple[bool, ...]
    openers: tuple[bool, ...]
    priced: dict[TokenCounter, _Costs] = field(default_factory=dict)

    def costs(self, count: TokenCounter) -> _Costs:
        """The passages' costs by `count`, remembered: a recalled text is excerpted again turn
        after turn (the window's counter is the same function each time)."""
        costs = self.priced.get(count)
        if costs is None:
            costs = self.priced[count] = self._price(count)
        return costs

    def _price(self, count: TokenCounter) -> _Costs:
        passages, last = self.passages, len(self.passages) - 1
        sizes = tuple(count(p.text) for p in passages)
        joined = tuple(
            count(p.text + " " + passages[at + 1].text) if self.openers[at] and at < last else size
            for at, (p, size) in enumerate(zip(passages, sizes, strict=True))
        )
        files = tuple(count(p.file) + 2 if p.code and p.file else 0 for p in passages)
        firsts = (
            (joined[at] + 1 + files[at + 1]) if self.openers[at] and at < last
            else sizes[at] + 1 + files[at]
            for at in range(len(passages))
            if self.stems[at]  # only these are ever taken first
        )  # fmt: skip
        return _Costs(sizes, joined, files, min(firsts, default=0))


# A render excerpts the messages it recalls, much the same ones turn after turn; tokenizing
# them again was half of a render with a query at 30,000 messages.
@lru_cache(maxsize=512)
def _scan(text: str) -> _Scan:
    passages = split_passages(text)
    return _Scan(
        passages,
        tuple(stems(p.text) for p in passages),
        tuple(_states_value(p) for p in passages),
        tuple(_is_opener(p) for p in passages),
    )


def _states_value(passage: Passage) -> bool:
    """Whether a passage states a value, or (a code line) defines a name."""
    if VALUE.search(passage.text):
        return True
    return passage.code and DEFINITION.match(passage.text) is not None


def _is_opener(passage: Passage) -> bool:
    """A short sentence that states nothing ("Good catch.", "Here is the fix:"): what it opens
    is the point."""
    if passage.code or passage.file or VALUE.search(passage.text):
        return False
    return len(passage.text.split()) <= OPENER_WORDS


def condense(text: str, max_tokens: int, count: TokenCounter) -> str:
    """`text` within `max_tokens`: its prose first, then the code and log lines that state or
    name something, in their original order and layout (prose as paragraphs, code lines in
    fences, "…" where lines were left out); what is left out is marked. A summarizer reads
    code as code: flattened into the prose, a reply's commands and settings read as part of
    its sentences."""
    passages = split_passages(text)
    ranked = sorted(
        range(len(passages)),
        key=lambda i: (
            not passages[i].code,
            bool(VALUE.search(passages[i].text)) or bool(passages[i].file),
            -i,
        ),
        reverse=True,
    )
    chosen: list[int] = []
    used = count(OMITTED) + 1
    for position in ranked:
        cost = count(passages[position].text) + 1
        if used + cost <= max_tokens:
            chosen.append(position)
            used += cost

    def marked(positions: list[int]) -> str:
        body = _laid_out(passages, positions)
        return body + OMITTED if len(positions) < len(passages) else body

    # the fences and gap marks cost too: the last chosen go until it fits
    return _fitted([[p] for p in chosen], max_tokens, count, marked) or marked([])


def file_label(path: str) -> str:
    """`path` as `FILE_LABEL` reads it: "(app/db.py)"."""
    return f"({path})"


def _laid_out(passages: tuple[Passage, ...], chosen: list[int]) -> str:
    """The `chosen` passages as a summarizer should read them: prose sentences as paragraphs,
    code lines in a fenced block, the file a block names said once, "…" for what is left out."""
    lines: list[str] = []
    fenced = False
    named: set[str] = set()
    previous = -2
    for position in chosen:
        passage = passages[position]
        gap = position != previous + 1 and previous >= 0
        if passage.code != fenced:
            if fenced:
                lines.append(FENCE)
            if gap:
                lines.append(GAP.strip())
            if passage.code:
                if passage.file and passage.file not in named and passage.file not in passage.text:
                    lines.append(file_label(passage.file))
                lines.append(FENCE)
            fenced = passage.code
            lines.append(passage.text)
        elif (
            passage.code
            or gap
            or not lines
            or _LIST_ITEM.match(passage.text)  # an item of a list starts a line
            or not lines[-1].endswith((".", "!", "?", ":", ";"))  # the line ended unfinished
        ):
            if gap:
                lines.append(GAP.strip())
            lines.append(passage.text)
        else:
            lines[-1] += " " + passage.text  # the next sentence of the same paragraph
        if passage.file:
            named.add(passage.file)
        previous = position
    if fenced:
        lines.append(FENCE)
    return "\n".join(lines)


def _join(passages: tuple[Passage, ...], chosen: list[int]) -> str:
    parts: list[str] = []
    named: set[str] = set()
    previous = -2
    for position in chosen:
        passage = passages[position]
        text = passage.text
        if passage.code and passage.file and passage.file not in named:
            named.add(passage.file)
            if passage.file not in text:
                text = f"{file_label(passage.file)} {text}"
        if parts:
            parts.append(" " if position == previous + 1 else GAP)
        parts.append(text)
        previous = position
    return "".join(parts)
