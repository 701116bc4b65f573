"""Deleting a thread: nothing of it survives in topics, summaries, titles, key lines or the IDF."""

from __future__ import annotations

from collections import Counter

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.embedding import extract
from topicforest.engine.summarize.extractive import ExtractiveSummarizer

from .helpers import TOPICS, exchange

SECRET = "zebrafish"  # said only in the thread that is deleted


def side_exchange(n: int) -> tuple[str, str]:
    return (
        f"The loader in data/loader.py::build_loader leaks {SECRET} buffers in "
        f"side/{SECRET}_cache.py when num_workers={n}.",
        f"Clear the {SECRET} cache in build_loader after each epoch; pin_memory stays on.",
    )


def summarize_all(window: ContextWindow) -> None:
    for job in window.summary_jobs(force=True):
        window.apply_summary(job, ExtractiveSummarizer().summarize_now(job.request))


def two_threads() -> tuple[ContextWindow, list[int], int]:
    """'side' starts the loader topic (its first message names it) and has an auth exchange of
    its own; 'main' talks about the loader and docker. All planted and summarized but side's
    last exchange, still hot. Returns the window, side's ids and main's first loader message."""
    window = ContextWindow(WindowConfig(history_budget=1024))
    side: list[int] = []
    t = 0.0

    def say(thread: str, user: str, reply: str) -> int:
        nonlocal t
        ids = [window.append(thread, "user", user, timestamp=t).id]
        ids.append(window.append(thread, "assistant", reply, timestamp=t + 1).id)
        t += 2
        if thread == "side":
            side.extend(ids)
        return ids[0]

    say("side", *side_exchange(1))
    window.flush_thread("side")
    main_loader = say("main", *exchange("loader", 2))
    for i in range(3, 6):
        say("main", *exchange("loader", i))
        say("main", *exchange("docker", i))
    window.flush_thread("main")
    say(
        "side",
        f"Is the {SECRET} refresh in src/auth/refreshAccessToken.ts racy?",
        TOPICS["auth"][1],
    )
    window.flush_thread("side")
    say("side", *side_exchange(9))  # stays in the hot zone
    summarize_all(window)
    return window, side, main_loader


def test_forgetting_a_thread_leaves_nothing_of_it() -> None:
    window, side, main_loader = two_threads()
    loader = window.forest.find(side[0])
    assert loader == side[0] and window.forest.find(main_loader) == loader
    window.pin(loader)
    assert any(SECRET in (window.topic(t).summary or "") for t in window.topic_ids())
    assert window.hot_messages("side")
    only_side = [t for t in window.topic_ids() if set(window.forest.members(t)) <= set(side)]
    assert only_side  # the auth exchange made a topic of its own
    next_id = window.log.next_id()

    changed = window.forget(side)

    gone = set(side)
    assert not gone & set(window.forest)
    assert "side" not in window.hot
    # The loader topic lost its own message: it goes on under its oldest remaining member,
    # pinned still; the topic made only of the deleted thread vanished.
    topics = set(window.topic_ids())
    renamed = window.forest.find(main_loader)
    assert renamed == main_loader and renamed in window.pinned and loader not in topics
    assert {loader, renamed} <= changed
    assert all(window.forest.members(t) for t in topics)
    assert not set(only_side) & topics
    # Summaries made from a deleted message are gone; the rest are made again from members.
    assert all(not gone & s.covered for s in window.summaries.values())
    summarize_all(window)
    for topic in topics:
        view = window.topic(topic)
        assert SECRET not in (view.summary or "") and SECRET not in view.title
        assert not any(SECRET in f for f in view.files)
    window.prepare_key_lines(10.0)
    for topic in topics:
        assert all(SECRET not in line.text for line in window.key_lines(topic) or [])
    # Centroids are their members' features again, and the IDF counts only what remains.
    planted = window.log.get_many(sorted(window.forest))
    df: Counter[str] = Counter()
    for message in planted:
        df.update(set(extract(message.content).terms))
    assert window.embedder.df == dict(df) and window.embedder.n_docs == len(planted)
    assert SECRET not in window.embedder.idf
    for topic in topics:
        members = window.log.get_many(window.forest.members(topic))
        terms: Counter[str] = Counter()
        for message in members:
            terms.update(window.embedder.features(message.content).terms)
        centroid = window.index[topic]
        assert centroid.terms == terms
        assert centroid.tokens == sum(m.tokens for m in members)
        assert centroid.first_time == min(m.timestamp for m in members)
    assert window.recall.search(window.recall.weights([SECRET], window.embedder.idf)) == []
    assert SECRET not in window.render(query=f"{SECRET} cache").text()
    # Ids are never reused.
    assert window.append("main", "user", "and now?").id == next_id


def test_forgetting_only_hot_messages_changes_no_topic() -> None:
    window = ContextWindow(WindowConfig(history_budget=1024))
    for i in range(3):
        window.append("main", "user", exchange("docker", i)[0])
    window.flush_thread("main")
    topics = window.topics()
    hot = [window.append("side", "user", "just a question").id]
    assert window.forget(hot) == set()
    assert window.topics() == topics and "side" not in window.hot
