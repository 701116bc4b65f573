"""Two stores on one file (as two windows would have): deltas, conflicts, the watcher."""

from __future__ import annotations

import asyncio

import pytest

from topicforest.engine import UnknownTopic
from topicforest.engine.embedding import norm_sq
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.store import Store
from topicforest.store.watcher import RELOAD_SECONDS, watch_store

from .conftest import Memory, sample_messages, state_of, synthetic


def fill(store: Store) -> None:
    asyncio.run(fill_async(store))


async def fill_async(store: Store) -> None:
    window = store.window
    assert window is not None
    for i, (role, content) in enumerate(sample_messages() + list(synthetic(120))):
        window.append(f"t{i // 60}", role, content, timestamp=100.0 + i)
        window.graduate()
    await resolve_all(window, ExtractiveSummarizer())


def test_refresh_loads_exactly_what_the_other_process_did(memory: Memory) -> None:
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    fill(a)
    assert len(wa.topic_ids()) > 3 and state_of(wb) != state_of(wa)
    assert b.refresh()
    assert state_of(wb) == state_of(wa)
    assert not b.refresh()  # nothing new
    # Small follow-up changes travel as deltas in both directions.
    topic = wa.topic_ids()[1]
    wb.drop(topic)
    wb.append("t9", "user", "Is the pg_isready healthcheck still needed in compose?")
    assert a.refresh()
    assert wa.topic(topic).dropped and wa.hot_messages("t9")
    wa.graduate("t9")
    wa.flush_thread("t9")
    assert b.refresh()
    assert state_of(wb) == state_of(wa)
    # The recall index follows other processes' graduations too.
    assert (
        wb.render(query="pg_isready healthcheck").text()
        == wa.render(query="pg_isready healthcheck").text()
    )


def test_changes_apply_to_current_state_not_a_stale_copy(memory: Memory) -> None:
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    fill(a)
    b.refresh()
    first, last = wa.topic_ids()[0], wa.topic_ids()[-1]
    survivor = wa.merge_topics(first, last)  # the maintainer merges topics (the larger stays)
    victim = last if survivor == first else first
    with a.transaction():
        pass  # commit the merge
    # b has not refreshed, yet its drop is checked against the committed state.
    with pytest.raises(UnknownTopic):
        wb.drop(victim)
    assert not wb.forest.is_root(victim)
    wb.pin(survivor)
    a.refresh()
    assert survivor in wa.pinned


async def test_watcher_reports_another_process_commit(memory: Memory) -> None:
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    await fill_async(a)
    b.refresh()
    seen = asyncio.Event()
    stop = asyncio.Event()
    watcher = asyncio.create_task(watch_store(b, seen.set, stop))
    await asyncio.sleep(0.3)  # let the watch start
    topic = wa.topic_ids()[0]
    wa.drop(topic)
    await asyncio.wait_for(seen.wait(), timeout=120)
    assert wb.topic(topic).dropped
    stop.set()
    await asyncio.wait_for(watcher, timeout=120)


async def test_watcher_loads_others_commits_only_once_quiet(memory: Memory) -> None:
    """The workspace hands its send gate in: a commit elsewhere is not loaded while a chat
    turn is between its receipt and its request leaving."""
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    await fill_async(a)
    b.refresh()
    seen, stop, turn_sent = asyncio.Event(), asyncio.Event(), asyncio.Event()
    watcher = asyncio.create_task(watch_store(b, seen.set, stop, turn_sent.wait))
    await asyncio.sleep(0.3)  # let the watch start
    topic = wa.topic_ids()[0]
    wa.drop(topic)
    await asyncio.sleep(1.0)  # the notification (or poll) has come: the watcher waits
    assert not seen.is_set() and not wb.topic(topic).dropped
    turn_sent.set()
    await asyncio.wait_for(seen.wait(), timeout=120)
    assert wb.topic(topic).dropped
    stop.set()
    await asyncio.wait_for(watcher, timeout=120)


async def test_watcher_loads_a_burst_of_commits_together(memory: Memory) -> None:
    """Another window committing every 40 ms is loaded at most every `RELOAD_SECONDS` (each
    load costs a reload and an upkeep round), and its last commit is loaded."""
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    await fill_async(a)
    b.refresh()
    loads, stop = [0], asyncio.Event()

    def loaded() -> None:
        loads[0] += 1

    watcher = asyncio.create_task(watch_store(b, loaded, stop))
    await asyncio.sleep(0.3)  # let the watch start
    topic, commits, started = wa.topic_ids()[0], 24, asyncio.get_running_loop().time()
    for i in range(commits):
        wa.pin(topic, pinned=i % 2 == 0)
        await asyncio.sleep(0.04)
    took = asyncio.get_running_loop().time() - started
    wa.drop(topic)
    async with asyncio.timeout(5):
        while not wb.topic(topic).dropped:
            await asyncio.sleep(0.05)
    assert 1 <= loads[0] <= took / RELOAD_SECONDS + 2
    stop.set()
    await asyncio.wait_for(watcher, timeout=120)


def test_refreshes_within_and_across_idf_epochs_equal_a_fresh_open(memory: Memory) -> None:
    """Another window's graduations arrive as deltas. Within an IDF epoch they only add counts
    and brand-new terms, applied in place (no new epoch, so not every centroid's norm is
    recomputed); across one the weights reload. Either way the window equals one opened afresh:
    the same state and the same render for a query (which ranks topics by their norms)."""
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    query = "pg_isready healthcheck in docker compose and the loader workers"
    in_place = 0
    for i, (role, content) in enumerate(sample_messages() + list(synthetic(500))):
        wa.append(f"t{i // 90}", role, content, timestamp=100.0 + i)
        wa.graduate()
        if i % 9:
            continue
        epoch = wb.embedder.epoch
        b.refresh()
        in_place += wb.embedder.epoch == epoch and wb.embedder.n_docs > 0
        idf = wb.embedder.idf  # every norm is current before any render (a turn's) needs it
        assert all(c.norm_sq == norm_sq(c.terms, idf) for c in wb.index.centroids.values())
        fresh = memory.open()
        try:
            wc = fresh.open_window()
            assert state_of(wb) == state_of(wc)
            assert wb.render(query=query).text() == wc.render(query=query).text()
        finally:
            fresh.close()
    assert wa.embedder.epoch >= 2  # the writer went through new IDF epochs on the way
    assert in_place >= 20  # and most refreshes applied counts without one


def test_another_window_shows_the_same_reshapes(memory: Memory) -> None:
    """A merge and a split made by the window that maintains the forest are shown as such in
    a window that only loads them from the store (engine/reshaping.py: note_loaded)."""
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    fill(a)
    b.refresh()
    first, last = wa.topic_ids()[0], wa.topic_ids()[-1]
    shown = {first: wa.title(first), last: wa.title(last)}
    sizes = {first: wa.forest.size(first), last: wa.forest.size(last)}
    survivor = wa.merge_topics(first, last)
    absorbed = last if survivor == first else first
    mover = next(r for r in wa.topic_ids() if r != survivor and wa.forest.size(r) >= 4)
    part = wa.forest.members(mover)[-2:]  # its newest exchange
    units = [u for u in wa.refiner.units.values() if set(u.ids) == set(part)]
    shown[mover] = wa.title(mover)
    new = wa.split_topic(mover, units)
    with a.transaction():
        pass  # commit
    assert b.refresh()

    def record(window, root):  # type: ignore[no-untyped-def]
        return [(n.kind, n.other, n.other_title, n.messages) for n in window.topic(root).reshapes]

    assert (
        record(wb, survivor)
        == record(wa, survivor)
        == [("merged", absorbed, shown[absorbed], sizes[absorbed])]
    )
    assert record(wb, new) == record(wa, new) == [("splitOff", mover, shown[mover], 2)]
    assert record(wb, mover) == record(wa, mover) == [("split", new, wa.title(new), 2)]
