"""When new messages reshape topics, the tree says so: each topic carries what happened to it
(split off another, part of it split off, another merged into it, messages moved) with the
other topic's id and the title the tree showed for it."""

from __future__ import annotations

import asyncio
import math

from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize import ExtractiveSummarizer

from .helpers import filled_window


def summarized(**config: object):  # type: ignore[no-untyped-def]
    window = filled_window(budget=512, rounds=8, **config)
    asyncio.run(resolve_all(window, ExtractiveSummarizer(), force=True))
    return window


def test_a_split_is_recorded_on_both_parts_with_the_title_shown_before() -> None:
    window = summarized(merge_threshold=0.0)  # every exchange in one topic, as a young forest
    (mixed,) = window.forest.live_roots()
    shown = window.topic(mixed).title
    assert window.topic(mixed).reshapes == ()
    window.refine(budget_seconds=math.inf, settle=True)
    parts = [r for r in window.forest.live_roots() if r != mixed]
    assert parts
    for part in parts:
        (note,) = window.topic(part).reshapes
        assert (note.kind, note.other, note.other_title) == ("splitOff", mixed, shown)
        assert note.messages == window.topic(part).message_count
    notes = window.topic(mixed).reshapes
    assert {n.kind for n in notes} == {"split"} and {n.other for n in notes} == set(parts)


def test_a_merge_names_the_topic_that_went_and_an_unseen_one_is_not_news() -> None:
    window = summarized()
    first, second, *_ = window.forest.live_roots()
    gone_title = window.title(second)
    sizes = {first: window.forest.size(first), second: window.forest.size(second)}
    survivor = window.merge_topics(first, second)
    absorbed = second if survivor == first else first
    (note,) = window.topic(survivor).reshapes
    assert note.kind == "merged" and note.other == absorbed
    assert note.messages == sizes[absorbed]
    assert note.other_title == (gone_title if absorbed == second else window.title(first))
    # a new exchange's topic that was never summarized (no title shown) merges silently
    words = "quaternion slerp gimbal lock euler angles camera orbit yaw pitch roll matrix"
    question = window.append("main", "user", f"new subject: {words}?", timestamp=1e4)
    window.append("main", "assistant", f"About {words}: " + words.upper(), timestamp=1e4)
    window.flush_thread("main")
    fresh = window.forest.find(question.id)
    assert fresh != survivor and fresh not in window.summaries
    before = window.topic(survivor).reshapes
    kept = window.merge_topics(survivor, fresh)
    assert window.topic(kept).reshapes == before


def test_a_quiet_forest_records_nothing_new() -> None:
    window = summarized()
    window.refine(budget_seconds=math.inf, settle=True)
    record = {r: window.topic(r).reshapes for r in window.forest.roots()}
    for _ in range(3):
        window.refine(budget_seconds=math.inf, settle=True)
    assert {r: window.topic(r).reshapes for r in window.forest.roots()} == record
