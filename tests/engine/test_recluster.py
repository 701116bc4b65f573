"""Re-clustering corrects online placement, keeps topic ids and flags, and keeps centroids exact."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

import pytest

from topicforest.engine.clustering import centered, unit_vector
from topicforest.engine.embedding import norm_sq
from topicforest.engine.recluster import Exchanges, regroup
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize import ExtractiveSummarizer

from .helpers import TOPICS, filled_window, finished


def subjects_of(window, root: int) -> set[str]:  # type: ignore[no-untyped-def]
    words = [m.content for m in window.members(root)]
    return {t for t, (u, _) in TOPICS.items() if any(u.split()[1] in w for w in words)}


def test_a_topic_mixed_online_is_split_and_keeps_its_id() -> None:
    # merge_threshold 0: every exchange joins the first topic, as an early, young forest does
    window = filled_window(budget=512, rounds=8, merge_threshold=0.0)
    (mixed,) = window.forest.live_roots()
    assert subjects_of(window, mixed) == set(TOPICS)
    window.pin(mixed)
    changed = window.refine(budget_seconds=math.inf, settle=True)
    live = window.forest.live_roots()
    assert mixed in changed and mixed in live  # the id the user knows stays
    assert len(live) == len(TOPICS)
    assert all(len(subjects_of(window, root)) == 1 for root in live)
    assert all(root in window.pinned for root in live)  # a split keeps the flag on both parts
    messages = sorted(m for root in live for m in window.forest.members(root))
    assert messages == sorted(set(messages))  # nothing lost, nothing twice


def test_moves_keep_centroids_exact() -> None:
    window = filled_window(budget=512, rounds=8, merge_threshold=0.0)
    window.refine(budget_seconds=math.inf, settle=True)
    idf = window.embedder.idf
    for root in window.forest.live_roots():
        centroid = window.index[root]
        assert centroid.norm_sq == pytest.approx(norm_sq(centroid.terms, idf), rel=1e-9)
        assert all(count > 0 for count in centroid.terms.values())


def test_a_settled_forest_does_not_churn() -> None:
    window = filled_window(budget=512, rounds=8)
    window.refine(budget_seconds=math.inf, settle=True)
    before = {root: window.forest.members(root) for root in window.forest.live_roots()}
    for _ in range(3):  # more rounds with nothing new change nothing
        assert window.refine(budget_seconds=math.inf, settle=True) == set()
    assert {root: window.forest.members(root) for root in window.forest.live_roots()} == before


def test_a_summary_mostly_about_what_left_is_made_again() -> None:
    """The demo's Postgres topic kept the title "Rate limit · …" after its rate-limit exchanges
    were split off: a summary (and its stored title) describing mostly other messages now goes,
    and the topic is summarized afresh from what it holds."""
    window = filled_window(budget=512, rounds=8, merge_threshold=0.0)
    (mixed,) = window.forest.live_roots()
    asyncio.run(resolve_all(window, ExtractiveSummarizer(), force=True))
    assert window.summaries[mixed].covered == set(window.forest.members(mixed))
    window.refine(budget_seconds=math.inf, settle=True)
    assert mixed not in window.summaries  # two thirds of what it covered left with the split
    assert window.is_dirty(mixed)
    asyncio.run(resolve_all(window, ExtractiveSummarizer(), force=True))
    remade = window.summaries[mixed]
    assert remade.covered == set(window.forest.members(mixed))
    (subject,) = subjects_of(window, mixed)
    others = [TOPICS[t][0].split()[1] for t in TOPICS if t != subject]
    assert not any(word in remade.text for word in others)


def test_centered_cosines_equal_cosines_of_centered_vectors() -> None:
    vectors = {1: (1.0, 0.0, 2.0), 2: (0.5, 1.0, 2.0), 3: (0.0, 2.0, 1.5), 4: (1.0, 1.0, 1.0)}
    unit = {k: tuple(x / math.hypot(*v) for x in v) for k, v in vectors.items()}
    mean = [sum(u[i] for u in unit.values()) / len(unit) for i in range(3)]

    def cos(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))

    items = sorted(vectors)
    raw = {(a, b): cos(unit[a], unit[b]) for i, a in enumerate(items) for b in items[i + 1 :]}
    centered_cosines = finished(centered(items, raw))  # it yields between chunks of pairs
    for (a, b), value in centered_cosines.items():
        ca = tuple(x - m for x, m in zip(unit[a], mean, strict=True))
        cb = tuple(x - m for x, m in zip(unit[b], mean, strict=True))
        assert value == pytest.approx(cos(ca, cb))


def test_a_word_every_subject_mentions_does_not_glue_two_subjects() -> None:
    """Four subjects of six exchanges, each exchange naming three of its subject's words; two
    exchanges of subjects a and b dwell on the project's database (`pool`, `postgres` three
    times each), and most exchanges of c and d mention it twice. By IDF alone the four
    database exchanges made a topic of their own, half a, half b; weighed by how spread over
    the first grouping a word is, each subject's exchanges stay together."""
    exchanges: dict[int, tuple[str, Counter[str]]] = {}
    for subject in "abcd":
        words = [f"{subject}{i}" for i in range(6)]
        for n in range(6):
            terms = Counter({words[n]: 1, words[(n + 1) % 6]: 1, words[(n + 3) % 6]: 1})
            if subject in "ab" and n < 2:
                terms.update({"pool": 3, "postgres": 3})
            if subject in "cd" and 1 <= n <= 4:
                terms.update({"pool": 2, "postgres": 2})
            exchanges[len(exchanges) + 1] = (subject, terms)
    idf = dict.fromkeys((t for _, terms in exchanges.values() for t in terms), 1.0)
    vectors = {key: unit_vector([terms], idf) for key, (_, terms) in exchanges.items()}
    items = list(vectors)
    window = Exchanges(items, vectors, [[k] for k in items], {})
    assignment = finished(regroup(window, idf, 16, {}))
    subjects: dict[int, set[str]] = {}
    for key, group in assignment.items():
        subjects.setdefault(group, set()).add(exchanges[key][0])
    assert all(len(found) == 1 for found in subjects.values())
