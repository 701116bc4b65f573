"""The offline summary a person reads: short first-person sentences, never a list, never code.

Made from a `Digest` (its units, ranking and named things). The densest sentences come first,
within half the room; then, while room is left, the piece that says the most names not said yet
per token: a sentence of the conversation, or one sentence per code block naming up to three of
its names ("You showed app/db.py with `pool_size=20` and `QueuePool`."; "I pasted a log with
…", never a log line's time, a record's fields or a generated id); then more sentences. They are
read in conversation order, one "You said:" per message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topicforest.engine.embedding import is_file_path
from topicforest.engine.tokens import estimate_tokens

if TYPE_CHECKING:
    from topicforest.engine.summarize.extractive import Digest

MAX_SENTENCE_TOKENS = 60  # a longer sentence is left out: a summary is short sentences
MAX_COMMAS = 3  # a sentence with more is a list of names rather than a sentence
CODE_NAMES = 3  # names one code block's sentence says
BLOCK_SENTENCES = 2  # sentences about one code block at most (more would read as a list)
FIRST_SHARE = 0.25  # of the room, for the densest sentences
_SPEAKER = re.compile(r"^(?:I said|You said|I asked|I pasted|You showed)\b:?\s*")
_NUMBER = re.compile(r"v?[\d.,_]+")
# A line that sets a value to a literal: `dunce = "1.0.4"`, `pub const MAX_PARTS: u64 = 10_000`,
# `num_workers: 6`, `- "5433:5432"`; and a short command (`cargo install x --version 0.18.4`).
_LITERAL = r"(?:\"[^\"]*\"|'[^']*'|[-\w.:/%+]+)"
_SETTING = re.compile(
    rf"^(?:(?:[a-z]+\s+){{0,2}}[\w.\-\[\]\"']+(?::\s*\w+)?\s*[=:]\s*{_LITERAL}|-\s+{_LITERAL})$"
)
_COMMAND = re.compile(
    r"^\$?\s*(?:cargo|pip|npm|yarn|pnpm|docker|kubectl|helm|git|terraform|make|go|python3?|apt|brew)"
    r"\s[^|;&<>`]*$"
)
_COMMENT = re.compile(r"\s(?:#|//)\s.*$")
# When a line was logged (`00:03:12.404`, `2024-03-25T14:02:11.904Z`): nothing a reader asks
# about. A block whose lines mostly carry one is a log, and is said as one.
_CLOCK = re.compile(
    r"(?:\d{4}-\d{2}-\d{2}[T ])?\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?Z?"
    r"|\d+Z"  # the milliseconds of a timestamp the line split (`…T08:12:03.118Z`)
)
# A record's fields, space-separated `key=value` pairs with a lower case key (`pid=1 tid=3nl`,
# `usedAt=… x-tb-network=…`, EXPLAIN's `rows=368102 width=16`): two or more make the line a
# record, whose fields name nothing of the project (a call's `pool_size=20,` is no record).
_FIELD = re.compile(r"(?:^|(?<=\s))[a-z][\w.-]*=[^\s,()]+(?=\s|$)")
_FIELD_NAME = re.compile(r"[a-z][\w.-]*=.*")
# A generated id: a hash (`8d1f0a3e2b7c`, the `3f9a1c0d` of a container `ledgerly-job-3f9a1c0d`)
# or an encoded blob (`Z2lkOi8vbGVkZ2VybHkv…`): it tells a machine's run, not the project.
_HASH = re.compile(r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}")
_BLOB = re.compile(r"(?=\S*\d)(?=\S*[a-z])(?=\S*[A-Z])[A-Za-z0-9+/=]{20,}")
ALSO_HAS = "It also has"  # a block's second sentence: said only right after its first
SHORT_LINE = 60  # characters: a code line this short that sets a value is quoted whole
MIN_WORDS = 6  # a sentence that names nothing is kept only if it says this much


def is_table_row(line: str) -> bool:
    """A markdown table's row (`| reason | status |`): said as a block, as code is."""
    return len(line) > 1 and line.startswith("|") and line.endswith("|")


def looks_like_code(line: str) -> bool:
    """A line of code or log pasted outside a fence: once inline `code` is taken out, it has
    hardly a word of prose and shows code's punctuation, or it starts as code does."""
    prose = _INLINE_CODE.sub(" ", line)
    words = len(_PROSE_WORD.findall(prose))
    if _CODE_START.match(line):
        return words < 6
    marks = len(_CODE_MARKS.findall(prose))
    return marks > 0 and words < 3 + 2 * marks


_INLINE_CODE = re.compile(r"`[^`]*`")
_PROSE_WORD = re.compile(r"(?<![\w./:=@$-])[A-Za-z][a-z]+(?:'[a-z]+)?(?![\w(/=:.-]*[\w(/=])")
_CODE_START = re.compile(
    r"(?:let|const|var|fn|def|pub|func|return|import|from|class|struct|impl|use|await|async)\s"
    r"|#include|#\[|\$ |>>>|//|[})\]]"
)
_CODE_MARKS = re.compile(r"[;{}]\s*$|=>|->|::|\w\(|\)\s*[;{?]|\s=\s|\|\|")


@dataclass(frozen=True)
class Piece:
    position: int  # of its (first) unit in the digest: conversation order
    message: int  # the message it comes from (-1: an earlier summary)
    speaker: str
    text: str
    names: tuple[str, ...]  # what it names, lower case
    cost: int
    code: bool  # a code block, said as a sentence of its names
    subject: str = "code"  # what a code block is called when no file names it ("a log")


def readable(digest: Digest, target_tokens: int) -> list[str]:
    """The sentences of the summary body, in conversation order."""
    budget = max(16, target_tokens)
    prose: list[Piece] = []
    blocks: dict[tuple[int, int], list[int]] = {}
    for position, ((speaker, sentence), (message, block)) in enumerate(
        zip(digest.units, digest.sources, strict=True)
    ):
        if block >= 0:
            blocks.setdefault((message, block), []).append(position)
            continue
        bare = _SPEAKER.sub("", sentence)
        if (
            digest.costs[position] > MAX_SENTENCE_TOKENS
            or bare.count(",") > MAX_COMMAS
            or looks_like_code(bare)
        ):
            continue
        names = tuple(dict.fromkeys(n.lower() for n in digest.found[position]))
        prose.append(
            Piece(position, message, speaker, sentence, names, digest.costs[position], False)
        )
    code = [_block(digest, positions) for positions in blocks.values()]
    order = {position: rank for rank, position in enumerate(digest.ranked)}
    chosen: list[Piece] = []
    said: set[str] = set()
    used = 0

    def take(piece: Piece) -> None:
        nonlocal used
        chosen.append(piece)
        said.update(piece.names)
        used += piece.cost

    # 1. the densest sentences that name something
    for piece in sorted(prose, key=lambda p: order[p.position]):
        if piece.names and used + piece.cost <= budget * FIRST_SHARE:
            take(piece)
    # 2. what is not said yet, cheapest per new name first
    left = [p for p in prose if p not in chosen]
    while True:
        best: tuple[float, int, Piece] | None = None
        for piece in left + code:
            if piece.code:
                told = sum(c.code and c.position == piece.position for c in chosen)
                if told >= BLOCK_SENTENCES:
                    continue
                piece = _code_sentence(piece, said, again=told > 0)
            new = len(set(piece.names) - said)
            if new and used + piece.cost <= budget:
                worth = (new / piece.cost, -piece.position, piece)
                if best is None or worth[:2] > best[:2]:
                    best = worth
        if best is None:
            break
        piece = best[2]
        take(piece)
        if not piece.code:
            left.remove(piece)
    # 3. room left over: the rest of the sentences that say something, by rank
    for piece in sorted(left, key=lambda p: order[p.position]):
        if used + piece.cost <= budget and len(piece.text.split()) >= MIN_WORDS:
            take(piece)
    # An earlier summary's "It also has …" goes only where the sentence it continues goes
    taken = {piece.position for piece in chosen}
    chosen = [
        piece
        for piece in chosen
        if piece.code or not piece.text.startswith(ALSO_HAS) or piece.position - 1 in taken
    ]
    return _said(sorted(chosen, key=lambda p: p.position))


def _block(digest: Digest, positions: list[int]) -> Piece:
    """A code block as what a sentence may say of it: its short lines that set a value
    (`pool_size=20`, `MAX_PARTS: u64 = 10_000`) or run a command, whole; then the names in its
    other lines, files first (a bare number out of a long line says nothing)."""
    values: list[str] = []
    names: list[str] = []
    logged = 0  # lines carrying a time of day
    rows = 0  # lines of a markdown table
    for position in positions:
        line = " ".join(_COMMENT.sub("", digest.units[position][1]).split()).rstrip(";, ")
        logged += _CLOCK.search(line) is not None
        rows += is_table_row(line)
        if _CLOCK.fullmatch(line):
            continue  # a log's blank line, but for its time
        if len(line) <= SHORT_LINE and (_SETTING.match(line) or _COMMAND.match(line)):
            values.append(line)
        else:
            record = len(_FIELD.findall(line)) >= 2
            names += [
                n
                for n in digest.found[position]
                if not _NUMBER.fullmatch(n)
                and any(c.isalpha() for c in n)  # not `/04/17` (of a log's date)
                and not _CLOCK.fullmatch(n)
                and not (record and _FIELD_NAME.fullmatch(n))
                and not _generated(n)
            ]
    unique = list(dict.fromkeys(names))
    files = [n for n in unique if is_file_path(n)]
    settings = [n for n in unique if "=" in n]
    taken = {*files, *settings}
    items = [*dict.fromkeys(values), *settings, *files, *(n for n in unique if n not in taken)]
    first = positions[0]
    speaker = "You showed" if digest.units[first][0] == "You said" else "I pasted"
    subject = (
        "a table" if 2 * rows >= len(positions)
        else "a log" if 2 * logged >= len(positions)
        else "code"
    )  # fmt: skip
    return Piece(first, digest.sources[first][0], speaker, "", tuple(items), 0, True, subject)


def _generated(name: str) -> bool:
    """A hash, a name with a hash in it, or an encoded blob (`_HASH`, `_BLOB`)."""
    return _BLOB.fullmatch(name) is not None or any(
        _HASH.fullmatch(part) for part in name.split("-")
    )


def _code_sentence(block: Piece, said: set[str], *, again: bool = False) -> Piece:
    """The block's sentence with up to three of its items not said yet ("You showed app/db.py
    with `pool_size=20`."; "It also has …" when the block was said before)."""
    fresh = [n for n in block.names if n.lower() not in said][:CODE_NAMES]
    files = [n for n in fresh if " " not in n and "=" not in n and is_file_path(n)]
    # a log that names a file is still a log ("I pasted a log with app/jobs/import.rb …")
    subject = files[0] if files and not again and block.subject == "code" else block.subject
    rest = [f"`{n}`" for n in fresh if n != subject]
    if again:
        text = f"{ALSO_HAS} {_and(rest)}." if rest else ""
    else:
        said_as = f"{block.speaker} {subject}"
        text = f"{said_as} with {_and(rest)}." if rest else f"{said_as}."
    lowered = tuple(n.lower() for n in fresh)
    cost = estimate_tokens(text) + 1
    return Piece(block.position, block.message, "", text, lowered, cost, True, block.subject)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _said(pieces: list[Piece]) -> list[str]:
    """Each piece as a sentence; sentences of one message after the first need no speaker."""
    out: list[str] = []
    last: tuple[int, str] | None = None
    for piece in pieces:
        if piece.code:
            out.append(piece.text)
            last = None
            continue
        same = last == (piece.message, piece.speaker) and piece.message >= 0
        # a sentence that opened a block or a list ("Add this to ci.yml:") ends here
        text = piece.text[:-1] + "." if piece.text.endswith(":") else piece.text
        # (a closing quote, bracket or backtick after the stop: `… (for tax reasons).`, not
        # `… the lock is `idem:lock:{key}`` before the next sentence)
        text = text if text.rstrip(")\"'`")[-1:] in ".?!" else text + "."
        out.append(text if same or not piece.speaker else f"{piece.speaker}: {text}")
        last = (piece.message, piece.speaker)
    return out
