"""Why a topic matches a query: the files and symbols of it the query names, and the passages of
its original messages that answer the query (what a search result shows as its reason).

The passages come from the same provenance recall a render uses (`RecallIndex`, then the
passages of each message that answer the query, `passages.excerpt`), so a search explains itself
with the text the chat would recall for the same question.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

from topicforest.engine.answer_types import asked_for
from topicforest.engine.embedding import extract_terms
from topicforest.engine.passages import excerpt, stem_weights
from topicforest.engine.render import RenderSource

RECALL_HITS = 200  # messages scored per query, across all topics
EXCERPT_TOKENS = 80  # per passage shown


@dataclass(frozen=True)
class Passage:
    message_id: int
    role: str
    timestamp: float
    text: str  # the excerpt: the message's sentences or lines that answer the query


@dataclass
class Match:
    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)


def named(name: str, terms: set[str]) -> bool:
    """Whether the query's `terms` name `name` (a path or an identifier): whole, by its file
    name, by that name without its extension, or by all of its parts (`UserTable` by "user
    table")."""
    base = posixpath.basename(name.replace("\\", "/"))
    stem_name = base.rsplit(".", 1)[0] if "." in base else base
    if terms & {name.lower(), base.lower(), stem_name.lower()}:
        return True
    parts = set(extract_terms(stem_name)) - {stem_name.lower()}  # the case tells the parts
    return len(parts) > 1 and parts <= terms


def matches(
    window: RenderSource, query: str, roots: Iterable[int], per_topic: int = 2
) -> dict[int, Match]:
    """For each topic of `roots`: what of it the query names, and up to `per_topic` passages
    of its messages that answer the query, best first."""
    wanted = set(roots)
    qvec = window.embedder.embed_query(query)
    terms = set(qvec)
    found: dict[int, Match] = {}
    for root in wanted:
        centroid = window.index[root]
        found[root] = Match(
            files=[f for f in centroid.files if named(f, terms)],
            symbols=[s for s in centroid.symbols if named(s, terms)],
        )
    idf = window.embedder.idf
    forest = window.forest
    picked: dict[int, list[int]] = {}
    weights = window.recall.weights(qvec, idf) if qvec else {}
    for message_id, _score in window.recall.search(weights, RECALL_HITS):
        if message_id not in forest:
            continue
        root = forest.find(message_id)
        ids = picked.setdefault(root, [])
        if root in wanted and len(ids) < per_topic:
            ids.append(message_id)
    chosen = [m for root in wanted for m in picked.get(root, [])]
    if not chosen:
        return found
    query_stems = stem_weights(weights)
    values = asked_for(query)
    messages = {m.id: m for m in window.log.get_many(chosen)}
    for root in wanted:
        for message_id in picked.get(root, []):
            message = messages[message_id]
            text = excerpt(message.content, query_stems, EXCERPT_TOKENS, window.count, values)
            if text:
                found[root].passages.append(
                    Passage(message.id, message.role, message.timestamp, text)
                )
    return found
