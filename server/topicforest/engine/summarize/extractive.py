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

import copy
import functools
import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from topicforest.engine.embedding import is_file_path, is_symbol
from topicforest.engine.messages import Message
from topicforest.engine.passages import FILE_LABEL, OMITTED
from topicforest.engine.summarize.base import SummaryRequest, SummaryResult
from topicforest.engine.summarize.readable import is_table_row, looks_like_code, readable
from topicforest.engine.tokens import estimate_tokens

CACHED_TEXT = 600  # characters: longer sentences are rare and not worth keeping around
# characters: a message's sentences are remembered up to this size (1,024 of them: at most ~8 MB)
CACHED_MESSAGE = 8_000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])")
_ENTITY = re.compile(
    r"\b[a-z][a-z0-9+.-]*://[^\s`'\"<>()\[\]]+"  # URLs, whole (host, port and path together)
    r"|(?<![\w-])--?[A-Za-z][\w-]+(?:=[^\s`'\"]+)?"  # flags (not the tail of "hand-written")
    # settings: num_workers=6, atol=1e-6; not an argument cut short at an expression
    # (`email=r["emailAddress"]`, `key=f"price:{pk}"`, `x=foo.bar(1)`)
    r"|\b[A-Za-z_][\w.]*=(?![rbfu]{1,2}[\"'])[\w.+-]*\w(?![\w\[(]|[.+-]\w)"
    r"|\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B|ms|px)\b"  # quantities with their unit: 6.8 GB, 320px
    # a date or a time of day, whole: a log line's `2024-03-15T19:02:11.022Z` is one thing
    r"|\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?Z?)?(?![\w-])"
    r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
    r"|\bv?\d+(?:\.\d+)+\b"  # versions
    r"|\b\d{1,3}(?:,\d{3})+\b"  # 43,200 (not "43" and "200")
    r"|\b\d{2,}[\w%]*\b"  # numbers, ports, sizes
    r"|[\w.-]*[/.][\w./-]*\w"  # paths, dotted names
    r"|\b[a-z][a-z0-9]*(?:-[a-z0-9]+){2,}\b"  # kebab-case names: pw-prod-monthly, gha-tf-plan
    r"|(?<=[`\"'])[a-z][a-z0-9]*-[a-z0-9-]*[a-z0-9](?=[`\"'])"  # quoted: `django-filter`
    r"|\b[A-Za-z_]\w*(?:_\w+|[a-z][A-Z]\w*)\b"  # snake_case / camelCase
    r"|\b[A-Z][A-Z0-9_]{2,}\b"  # CONSTANTS, ENV_VARS
)


# upper case words of a query language or a log line: they name nothing of the project
KEYWORDS = frozenset(
    """SELECT FROM WHERE SET UPDATE INSERT INTO VALUES DELETE JOIN LEFT RIGHT INNER OUTER ON
    AND OR NOT NULL ORDER GROUP BY HAVING LIMIT OFFSET AS IS IN CREATE TABLE INDEX ALTER DROP
    ADD COLUMN PRIMARY KEY DEFAULT UNIQUE CASE WHEN THEN ELSE END BEGIN COMMIT ROLLBACK
    DEBUG INFO WARN WARNING ERROR FATAL TRACE CRITICAL""".split()
)
# `.github/workflows/ci.yml`, `.env`, `./run.sh`, `../lib`: the dot is part of the name
_DOT_PATH = re.compile(r"\.\.?/|\.[A-Za-z]")
_MEMBER_BEFORE = re.compile(r"[\w)\]}]\.[A-Za-z_]")  # `expect(x).toBe`, `r["a"].lower`


def entities(text: str) -> tuple[str, ...]:
    """The named things in `text`, in order (remembered for short texts: a render that rebuilds
    a digest meets the same sentences again)."""
    return _short_entities(text) if len(text) <= CACHED_TEXT else _entities(text)


@functools.lru_cache(maxsize=2048)
def _short_entities(text: str) -> tuple[str, ...]:
    return _entities(text)


def _entities(text: str) -> tuple[str, ...]:
    found = []
    for match in _ENTITY.finditer(text):
        token = match.group().strip(",:;()").rstrip(".")
        if token.startswith(".") and _MEMBER_BEFORE.match(text, max(0, match.start() - 1)):
            continue  # `).toBe`, `].lower`: a member of what comes before, not a dotfile
        if token.startswith(".") and not _DOT_PATH.match(token):
            token = token.lstrip(".")  # an ellipsis, not a dotfile or a relative path
        if len(token) < 2 or token in KEYWORDS:
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


def _lead_names(mentions: Counter[str], count: int = 3) -> list[str]:
    """The names a lead opens with: the files the most messages mention, then code names, then
    other words; numbers, flags and URLs only when nothing else is named ("about app/db.py,
    QueuePool", not "about API, 60")."""
    ranked = [n for n, _ in mentions.most_common() if not _ABBREVIATION.fullmatch(n)]
    # among files as often mentioned, the project's (`app/db.py`) before a path outside it
    # (`/usr/local/bundle/gems/…`, `/app/.venv/bin/gunicorn` of a pasted trace or listing)
    files = sorted(
        (n for n in ranked if is_file_path(n)), key=lambda n: (-mentions[n], n[:1] == "/")
    )
    plain = [n for n in files if _plainly_a_file(n)]
    code = [n for n in ranked if is_symbol(n) and n not in files]
    folders = [n for n in files if n not in plain]  # `internal/testutil`, or `reads/writes`
    taken = {*files, *code}
    words = [n for n in ranked if n[:1].isalpha() and "://" not in n and n not in taken]
    return (plain + code + folders + words)[:count] or ranked[:count]


_ABBREVIATION = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]\.?")  # "e.g", "i.e.": no code name


def _plainly_a_file(path: str) -> bool:
    """A path no one reads as words: a file name with an extension (`app/db.py`, `Dockerfile`
    has none but is no slash pair), a rooted path (`/dev/shm`), or a part that is no word
    (`terraform-aws-modules/vpc`); not `REST/JSON`, `reads/writes` or `begin/commit/rollback`."""
    parts = path.strip("/").split("/")
    return (
        "/" not in path.strip("/")
        or "." in parts[-1]
        or path.startswith(("/", "./", "../", "~"))
        or any(not part.isalpha() for part in parts)
    )


class Unit(NamedTuple):
    """A sentence or code line of a message, with what a digest reads of it."""

    sentence: str
    block: int  # -1 for prose, else its code block's number
    names: tuple[str, ...]  # `entities`
    distinct: int  # how many different things it names
    tokens: int
    # What a digest adds each time it reads the unit (a render builds or extends a digest of a
    # topic's messages after each summary or graduation, ~200 units each): its cost said by
    # each of `SPEAKERS`, its worth before recency, and the names a cut may offer with their
    # lowercase and cost (a topic's title may still hide some).
    costs: tuple[int, ...]
    worth: float
    offered: tuple[tuple[str, str, int], ...]


SPEAKERS = ("", "I said", "You said")  # a summary's sentence, the user's, the model's


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
    distinct, tokens = len(set(names)), estimate_tokens(sentence)
    return Unit(
        sentence,
        block,
        names,
        distinct,
        tokens,
        tuple(estimate_tokens(f"{speaker}: {sentence}") + 1 for speaker in SPEAKERS),
        distinct + distinct / (1 + tokens / 25),
        _offerable(names),
    )


def _offerable(names: Sequence[str]) -> tuple[tuple[str, str, int], ...]:
    """The names a cut may offer (no bare small numbers), lowercased and priced."""
    return tuple((n, n.lower(), estimate_tokens(n) + 1) for n in names if not _bare_number(n))


def _unbold(line: str) -> str:
    """`line` without markdown's bold markers ("**Retry window.** …"), but for those in code
    (a glob, `src/**`): the parts between backticks are code."""
    parts = line.split("`")
    return "`".join(part if at % 2 else part.replace("**", "") for at, part in enumerate(parts))


def _units(text: str) -> list[tuple[str, int]]:
    """Sentences of prose and the lines of code that name something, each with its block: -1
    for prose, else the number of the code block it belongs to (a fenced block, or a run of
    lines that read as code)."""
    out: list[tuple[str, int]] = []
    in_fence = False
    block = 0
    # a long paste reaches the summarizer condensed, marked as such: the mark is no sentence
    for line in text.removesuffix(OMITTED).splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            block += 1
            continue
        if not stripped or stripped.startswith("#!"):  # a shebang names no file of the project
            continue
        label = None if in_fence else FILE_LABEL.fullmatch(stripped)
        if label and is_file_path(label[1]):  # the file of the block after it (`condense`)
            out.append((label[1], block + 1))
            continue
        if in_fence or looks_like_code(stripped) or is_table_row(stripped):
            if entities(stripped):
                out.append((stripped.strip("` "), block))
            continue
        block += 1
        parts = _SENTENCE_END.split(_unbold(stripped.lstrip("#>*- ")))
        out.extend((part.strip(), -1) for part in parts if part.strip())
    return out


SENTENCE_SHARE = 0.5
LEAD = "I asked you about"
ALSO = "Also mentioned:"


class Digest:
    """A text cut into scored sentences and named things, ready to be cut to any size quickly.

    A digest grows (`extended`): a render digests a dirty topic's new messages again each time
    upkeep graduates an exchange into it, and reading the ones it had read already (finding
    repeats, pricing sentences, sorting out names) was most of a build."""

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
        self.known = known.lower()
        self.earlier = max(earlier, 0)
        self.messages_read = 0
        self.units: list[tuple[str, str]] = []  # (speaker prefix, sentence)
        self.sources: list[tuple[int, int]] = []  # per unit: (message, code block or -1)
        self.found: list[tuple[str, ...]] = []  # what each sentence names
        self.named: list[bool] = []
        self.costs: list[int] = []
        # per name, the messages (or earlier summary's sentences) that mention it: a pasted
        # stack trace names `AssertionFailureBuilder.java` ten times, in one message
        self.mentions: Counter[str] = Counter()
        self.first_seen: dict[str, int] = {}
        # a line said twice (a code line quoted again) says nothing new
        self._seen: set[str] = set()
        self._worth: list[float] = []  # per unit, its score before recency
        self._offered: list[list[str]] = []  # per mention, the names a cut may offer
        self._name_costs: dict[str, int] = {}  # what each of those costs in a cut
        told = _message_units(previous_summary or "")
        # our own lists of names: each name a mention of its own, and older than the sentences
        # that summary kept
        for unit in told:
            if unit.sentence.startswith(ALSO):
                for name in unit.sentence[len(ALSO) :].rstrip(".").split(", "):
                    self._mention((name,))
                    self.mentions[name] += 1
        first = min(self.earlier, len(messages))
        self._read(messages[:first])  # in conversation order: what came before the summary
        for unit in told:
            if not unit.sentence.startswith((ALSO, LEAD)):  # the lead is written anew below
                self._add(0, unit, (-1, -1))
                self.mentions.update(dict.fromkeys(unit.names).keys())
        self._read(messages[first:])
        self._rank()

    def extended(self, messages: Sequence[Message]) -> Digest:
        """A digest of this one's messages and then `messages`, the same as one built from all
        of them, without reading this one's again (this one stays as it is)."""
        grown = copy.copy(self)
        grown.grow(messages)
        return grown

    def grow(self, messages: Sequence[Message]) -> None:
        """Read `messages` after those read: this becomes the digest of them all. It must have
        read its `earlier` messages (the summary's sentences come after them). In place: not
        for a digest others hold (a cache's), which `extended` leaves alone."""
        if self.earlier > self.messages_read:
            raise ValueError("the summary's sentences would move: build the digest anew")
        self.__dict__.pop("lead", None)  # a cached property, of fewer messages
        self._read(messages)
        self._rank()

    def __copy__(self) -> Digest:
        """A digest that grows apart from this one: its lists, sets and dicts are its own."""
        twin = Digest.__new__(Digest)
        mutable = (list, dict, set)
        twin.__dict__.update(
            (name, value.copy() if isinstance(value, mutable) else value)
            for name, value in vars(self).items()
        )
        return twin

    def _read(self, messages: Sequence[Message]) -> None:
        for message in messages:
            speaker = 1 if message.role == "user" else 2  # in `SPEAKERS`
            named: dict[str, None] = {}  # in order: ties go to the name said first
            for unit in _message_units(message.content):
                self._add(speaker, unit, (self.messages_read, unit.block))
                named.update(dict.fromkeys(unit.names))
            self.mentions.update(named.keys())
            self.messages_read += 1

    def _add(self, speaker: int, unit: Unit, source: tuple[int, int]) -> None:
        """Add `unit`, said by `SPEAKERS[speaker]`."""
        if unit.sentence in self._seen:
            return
        self._seen.add(unit.sentence)
        self.units.append((SPEAKERS[speaker], unit.sentence))
        self.sources.append(source)
        self.found.append(unit.names)
        self.named.append(bool(unit.names))
        self.costs.append(unit.costs[speaker])
        self._worth.append(unit.worth)
        self._mention(unit.names, unit.offered)

    def _mention(
        self, names: Sequence[str], offerable: tuple[tuple[str, str, int], ...] | None = None
    ) -> None:
        """A mention of `names` (`offerable`: theirs as `_offerable` gives them, if known)."""
        for name in names:
            self.first_seen.setdefault(name, len(self.first_seen))
        known = self.known
        costs = self._name_costs
        offered = []
        for name, lower, cost in _offerable(names) if offerable is None else offerable:
            if lower not in known:
                offered.append(name)
                if name not in costs:
                    costs[name] = cost
        self._offered.append(offered)

    def _rank(self) -> None:
        """What depends on all the units: their order by worth (recency counts, and the newest
        moves as units are added) and the names in the order a cut offers them."""
        last = max(1, len(self.units) - 1)
        worths = enumerate(self._worth)
        scored = sorted(((w + 0.5 * at / last, at) for at, w in worths), reverse=True)
        self.ranked = [position for _, position in scored]
        self.entities = _spread(self._offered)
        self.entity_costs = list(map(self._name_costs.__getitem__, self.entities))
        # what `select` needs again and again
        self.lower_entities = list(map(str.lower, self.entities))
        self.least_cost = min(self.costs, default=0)
        self.least_entity_cost = min(self.entity_costs, default=0)

    @functools.cached_property
    def lead(self) -> str:
        """What the topic is about, for a summary shown on its own (a render's cut has none):
        its two most named things, in a sentence."""
        names: list[str] = []
        for name in _lead_names(self.mentions, 4):  # not `fonts/a.ttf` after `static/fonts/a.ttf`
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
    # Only the sentences that still name something at a depth are visited: one code line
    # naming thirty things made every round walk all of a digest's ~500 sentences.
    queues = [names for names in map(tuple, map(dict.fromkeys, reversed(found))) if names]
    order: dict[str, None] = {}
    depth = 0
    while queues:
        order.update(dict.fromkeys([names[depth] for names in queues]))
        depth += 1
        queues = [names for names in queues if len(names) > depth]
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
