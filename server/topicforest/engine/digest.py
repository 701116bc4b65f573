"""The digests a render cuts topics' summaries and new messages from, cached per window.

A digest (`Digest`) is keyed by what it is made of, so a query that recalls none of its messages
finds the one the last render built. A topic that only gained messages since (upkeep graduated
an exchange into it) has its last digest extended rather than built anew: back to back, the
next question often comes before upkeep could prepare it, and rebuilding the digests of the
topics just grown made most of the slowest turns' extra time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from topicforest.engine.config import WindowConfig
from topicforest.engine.messages import Message
from topicforest.engine.summarize.extractive import Digest

Key = tuple[int, ...]


class DigestSource(Protocol):
    """What the cache reads of a window (a `RenderSource` is one)."""

    @property
    def config(self) -> WindowConfig: ...
    @property
    def summary_digests(self) -> dict[Key, Digest]: ...

    def title(self, root: int) -> str: ...


def cached_digest(
    window: DigestSource,
    root: int,
    previous: str | None,
    messages: list[Message],
    earlier: int = 0,
) -> Digest:
    """The window's digest of topic `root`'s summary and messages, built (or extended) on first
    use; the cache stays small.

    Names the topic's header (its title) already shows are not offered again; the first
    `earlier` messages came before what `previous` tells, and their sentences go first."""
    title = window.title(root)
    head = (root, hash(previous), hash(title), earlier)
    key = (*head, *(m.id for m in messages))  # the ids last: a digest of fewer is a prefix
    digests = window.summary_digests
    digest = digests.pop(key, None)
    if digest is None:
        grown = _grown_from(digests, key, len(head), earlier)
        if grown is None:
            digest = Digest(previous, messages, title, earlier)
        else:
            digest = digests[grown].extended(messages[len(grown) - len(head) :])
        # the least recently used go: clearing them all made the next render build every
        # topic's digest again
        while len(digests) >= 4 * window.config.max_topics + 64:
            del digests[next(iter(digests))]
    digests[key] = digest  # last: the most recently used
    return digest


def _grown_from(digests: Mapping[Key, Digest], key: Key, head: int, earlier: int) -> Key | None:
    """The longest cached key that `key` extends: the same first `head` values (topic, summary,
    title, `earlier`), then the first of its messages, at least `earlier` of them (a digest
    extends only after the messages that come before the summary); None if there is none."""
    best: Key | None = None
    for cached in digests:
        if (
            cached[0] == key[0]  # most entries are other topics'
            and head + earlier <= len(cached) < len(key)
            and (best is None or len(cached) > len(best))
            and key[: len(cached)] == cached
        ):
            best = cached
    return best
