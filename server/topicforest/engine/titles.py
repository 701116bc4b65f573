"""What a person would call a topic: a few words that name its subject, unique among live topics.

A title is stored with its summary (the summary model's `Title:` line, else the offline one
written when the summary is applied: the two-word phrase of the topic's prose whose words it
uses most, ending in a noun where it can, with the file or name it is most about: "Rate limit ·
ratelimit.py"), so every
window shows the same one. Before its first summary, or with no prose, a topic is titled by the
files and names it mentions most. A title is never numbers alone ("85, 84, 0.00"); an offline
title does not take a phrase another live topic is titled by, and two live topics with the same
title (a model's) are told apart by what each names that the other does not.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Mapping
from operator import attrgetter
from typing import Protocol

from topicforest.engine.centroids import CentroidIndex
from topicforest.engine.embedding import Embedder, is_file_path
from topicforest.engine.forest import Forest
from topicforest.engine.keylines import NOUN_MARK, nouns
from topicforest.engine.render import sanitize_line
from topicforest.engine.state import Summary
from topicforest.engine.summarize.base import model_title

MIN_PHRASE_MESSAGES = 2  # a title phrase is said in at least this many messages
NOUN_BONUS = 1.0  # a phrase ending in a word the topic uses as a noun counts this much more
NAMES = 2  # files or names in a title made of names
MAX_NAME = 24  # characters: a longer name makes a title a line of code
_TOKEN = re.compile(r"[\s,;·()]+")
_TEXT = attrgetter("text")
UNITS = frozenset("ms us ns kb mb gb tb kib mib gib tib px pt em rem hz khz mhz ghz".split())


class TitleSource(Protocol):
    @property
    def index(self) -> CentroidIndex: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def forest(self) -> Forest: ...
    @property
    def summaries(self) -> Mapping[int, Summary]: ...


def names_something(title: str) -> bool:
    """A title says something: a word with two letters or more that is not a number or a unit
    (`0.00`, `85, 84`, `15m`, `v0.17.8` and `2.25 GiB` are numbers alone; `s3.rs` is not)."""
    for token in _TOKEN.split(title):
        letters = "".join(c for c in token if c.isalpha()).lower()
        if len(letters) >= 2 and letters not in UNITS:
            return True
    return False


class Titles:
    """Each topic's title, remembered until its topic, summary or vocabulary epoch changes."""

    def __init__(self, source: TitleSource, limit: int) -> None:
        self.source = source
        self.limit = limit  # titles remembered at most
        self._stored: dict[tuple[int, int, int, str], str] = {}
        self._live: tuple[object, dict[int, str]] = ((), {})

    def title(self, root: int) -> str:
        """The topic's title, told apart from any other live topic's with the same one."""
        live = self._live_titles()
        return live[root] if root in live else self.stored(root)

    def _live_titles(self) -> dict[int, str]:
        """Every live topic's title, remembered while no topic's members, drop flag or summary
        and no vocabulary epoch changes: a render asks for a title per block and header, and
        telling twins apart looks at every live topic."""
        source = self.source
        state = (
            source.embedder.epoch,
            source.forest.changes,
            tuple(source.summaries),
            tuple(map(_TEXT, source.summaries.values())),  # in C: this runs ~30 times a render
        )
        if state != self._live[0]:
            live = {r: self.stored(r) for r in source.forest.live_roots()}
            twins: dict[str, list[int]] = {}
            for r, base in live.items():
                twins.setdefault(base.lower(), []).append(r)
            for group in (g for g in twins.values() if len(g) > 1):
                live.update({r: self._told_apart(sorted(group), live[r])[r] for r in group})
            self._live = (state, live)
        return self._live[1]

    def stored(self, root: int) -> str:
        """The title stored with the topic's summary, else (before its first summary, or a
        stored title that names nothing) the one its named things make."""
        summary = self.source.summaries.get(root)
        key = (
            root,
            self.source.forest.version(root),
            self.source.embedder.epoch,
            summary.text if summary else "",
        )
        cached = self._stored.get(key)
        if cached is None:
            given = model_title(summary.text) if summary else None
            if given is not None and not names_something(given):
                given = None
            cached = self._stored[key] = sanitize_line(given or self.of_names(root))
            if len(self._stored) > self.limit:
                self._stored = {key: cached}
        return cached

    def offline(self, root: int, phrases: Counter[str]) -> str:
        """The phrase of the topic's prose whose words it uses most, with the file or name it
        is most about ("Rate limit · ratelimit.py"); its named things if it has no prose."""
        centroid = self.source.index[root]
        # another live topic's subject is not this one's: "(depotId)" tells twins apart, their
        # next best phrase says what this one is about
        taken = {
            self.stored(r).split(" · ")[0].lower()
            for r in self.source.forest.live_roots()
            if r != root
        }
        phrase = self.best_phrase(
            Counter({p: n for p, n in phrases.items() if p not in taken}) or phrases,
            centroid.terms,
        )
        if not phrase:
            return self.of_names(root)
        # A file by its name first ("progress.rs"), then a symbol, then a folder-like path (the
        # last part of `backups/photos`, or of a template's `cyan/blue`, names little).
        files = [_short(n) for n, _ in centroid.files.most_common(3)]
        symbols = [n for n, _ in centroid.symbols.most_common(3) if len(n) <= MAX_NAME]
        named = [n for n in files if is_file_path(n)] + symbols + files
        thing = next((n for n in named if names_something(n)), None)
        return f"{phrase.capitalize()} · {thing}" if thing else phrase.capitalize()

    def of_names(self, root: int) -> str:
        """The files and names the topic mentions most (files first: what a developer
        recognises at a glance), else its rarest words; never numbers alone."""
        centroid = self.source.index[root]
        ranked = (centroid.files + centroid.symbols).most_common(2 * NAMES + 2)
        named = [n for n, _ in ranked if names_something(_short(n))][:NAMES]
        ordered = sorted(named, key=lambda n: n not in centroid.files)  # stable: by count within
        names = list(dict.fromkeys(_short(n) for n in ordered))
        if len(names) < NAMES:
            idf = self.source.embedder.idf
            top = heapq.nlargest(
                8, centroid.terms.items(), key=lambda kv: kv[1] * idf.get(kv[0], 0.0)
            )
            for term, _ in top:
                taken = any(term in n.lower() for n in names)
                if len(names) < NAMES and names_something(term) and not taken:
                    names.append(term)
        return " · ".join(names) or f"Topic {root}"

    def best_phrase(self, phrases: Counter[str], terms: Counter[str]) -> str | None:
        """The phrase whose words this topic uses most, weighted by how rare they are
        elsewhere, among those said in more than one message (if any are); one ending in a word
        the topic uses as a noun counts `1 + NOUN_BONUS` times."""
        idf = self.source.embedder.idf
        used_as_nouns = nouns(phrases)

        def weight(phrase: str) -> float:
            return sum(terms.get(w, 0) * idf.get(w, 0.0) for w in phrase.split())

        scored = [
            (
                count
                * weight(phrase)
                * (1 + NOUN_BONUS * (phrase.rsplit(" ", 1)[-1] in used_as_nouns)),
                phrase,
            )
            for phrase, count in phrases.items()
            if not phrase.startswith(NOUN_MARK)
        ]
        said_again = [item for item in scored if phrases[item[1]] >= MIN_PHRASE_MESSAGES]
        scored = said_again or scored
        return max(scored)[1] if scored else None

    def _told_apart(self, twins: list[int], base: str) -> dict[int, str]:
        """Each of the topics sharing `base`, with the file or name it mentions most that the
        others do not; numbered in id order where that does not tell them apart."""
        index = self.source.index
        named = {
            r: [_short(n) for n, _ in (index[r].files + index[r].symbols).most_common(8)]
            for r in twins
        }
        apart: dict[int, str] = {}
        for root in twins:
            others = {n for r in twins if r != root for n in named[r][: NAMES + 1]}
            own = (
                n
                for n in named[root]
                if n not in others and n.lower() not in base.lower() and names_something(n)
            )
            mark = next(own, None)
            apart[root] = f"{base} ({mark})" if mark else base
        if len(set(apart.values())) < len(twins):
            apart = {r: f"{base} ({n})" for n, r in enumerate(twins, 1)}
        return apart


def _short(name: str) -> str:
    """A file by its name (`ratelimit.py`, not `app/middleware/ratelimit.py`)."""
    return name.rstrip("/").rsplit("/", 1)[-1] or name
