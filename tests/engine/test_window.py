"""The context window: hot zone, graduation, topic actions, render rules, bad input."""

from __future__ import annotations

from typing import Any

import pytest

from topicforest.engine import ContextWindow, InvalidMessage, UnknownTopic, WindowConfig
from topicforest.engine.render import MEMORY_HEADER

from .helpers import TOPICS, exchange, filled_window


def test_hot_zone_stays_within_half_budget_and_starts_at_a_user_turn() -> None:
    window = filled_window(budget=1024)
    hot = window.hot_messages("main")
    assert sum(m.tokens for m in hot) <= window.config.hot_budget
    assert hot[0].role == "user"
    assert len(window.forest) + len(hot) == len(window.log)


def test_graduated_messages_form_one_topic_per_subject() -> None:
    window = filled_window(budget=512, rounds=8)
    assert 1 <= len(window.forest.live_roots()) <= window.config.max_topics
    for root in window.forest.roots():
        words = " ".join(m.content for m in window.members(root))
        hits = [t for t, (u, _) in TOPICS.items() if u.split()[1] in words]
        assert len(hits) == 1, f"topic {root} mixes {hits}"


def test_single_oversized_message_cannot_deadlock_graduation() -> None:
    window = ContextWindow(WindowConfig(history_budget=256))
    window.append("main", "user", "short question about data/loader.py")
    window.append("main", "assistant", "x " * 2000)  # far bigger than the hot budget
    window.append("main", "user", "and the docker image size?")
    window.graduate()
    hot = window.hot_messages("main")
    assert [m.role for m in hot] == ["user"]  # everything older graduated
    rendered = window.render(thread_id="main")
    assert rendered.tokens <= 256


def test_newest_message_alone_over_budget_is_truncated_in_render() -> None:
    window = ContextWindow(WindowConfig(history_budget=128))
    window.append("main", "user", "word " * 1000)
    rendered = window.render(thread_id="main")
    assert rendered.tokens <= 128
    assert rendered.messages[-1]["content"].endswith("…")


def test_max_topics_is_enforced_by_merging() -> None:
    window = ContextWindow(WindowConfig(history_budget=256, max_topics=3, merge_threshold=0.9))
    for i in range(20):
        window.append("t", "user", f"unrelated subject number{i} alpha{i} beta{i} gamma{i} z{i}")
        window.append("t", "assistant", f"reply about thing{i} delta{i} epsilon{i} zeta{i} q{i}")
        window.graduate()
    assert len(window.forest.live_roots()) <= 3


def test_drop_removes_topic_from_render_and_restore_brings_it_back() -> None:
    window = filled_window()
    root = window.forest.live_roots()[0]
    before = window.render(thread_id="main")
    assert root in {t.id for t in before.topics}
    members = [m.id for m in window.members(root)]
    window.drop(root)
    after = window.render(thread_id="main")
    assert root not in {t.id for t in after.topics}
    assert f"## Topic {root}:" not in after.text()
    window.restore(root)
    assert [m.id for m in window.members(root)] == members
    assert root in {t.id for t in window.render(thread_id="main").topics}


def test_dropped_topic_receives_no_new_messages() -> None:
    window = filled_window()
    for root in window.forest.live_roots():
        window.drop(root)
    sizes = {r: window.forest.size(r) for r in window.forest.roots()}
    window.append("main", "user", "The DataLoader num_workers again in data/loader.py " * 3)
    window.append("main", "assistant", "build_loader pad_collate persistent_workers " * 5)
    window.flush_thread("main")
    assert all(window.forest.size(r) == n for r, n in sizes.items())


def test_pinned_topic_always_rendered_even_when_irrelevant() -> None:
    window = filled_window(budget=300, rounds=10)
    roots = window.forest.live_roots()
    target = roots[-1]
    window.pin(target)
    for query in ["docker shm-size", "auth refresh tabs", "DataLoader workers"]:
        rendered = window.render(query=query, thread_id="main")
        assert target in {t.id for t in rendered.topics}
        assert rendered.tokens <= 300


def test_query_relevant_topic_ranks_first() -> None:
    window = filled_window(budget=2048)
    for query, word in [("docker image shm-size", "Dockerfile"), ("refresh token tabs", "auth")]:
        rendered = window.render(query=query, thread_id="main")
        first = rendered.topics[0].id
        assert word in " ".join(m.content for m in window.members(first))


def test_active_file_boosts_its_topic() -> None:
    window = filled_window(budget=2048)
    rendered = window.render(active_file="file:///repo/src/auth/refreshAccessToken.ts")
    first = rendered.topics[0].id
    assert "refreshAccessToken" in " ".join(m.content for m in window.members(first))


def test_expanded_topic_renders_originals_verbatim() -> None:
    window = filled_window(budget=4096)
    window.flush_thread("main")
    root = window.forest.live_roots()[0]
    originals = window.expand(root)
    rendered = window.render(thread_id="main")
    entry = next(t for t in rendered.topics if t.id == root)
    assert entry.mode == "expanded"
    for message in originals:
        assert f"| {message.role}: {message.content}" in rendered.text()
    window.collapse(root)
    assert next(t for t in window.render().topics if t.id == root).mode != "expanded"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "empty"),
        ("   \n\t", "empty"),
        (b"\xff\xfe\x00binary", "UTF-8"),
        ("abc\x00def", "binary"),
        ("x" * 300_000, "limit"),
        (42, "string"),
        ("\ud800 lone surrogate", "UTF-8"),
    ],
)
def test_bad_input_raises_clear_error_and_changes_nothing(content: object, reason: str) -> None:
    window = filled_window()
    before = (len(window.log), len(window.forest), window.hot_messages("main"))
    with pytest.raises(InvalidMessage, match=reason):
        window.append("main", "user", content)
    assert (len(window.log), len(window.forest), window.hot_messages("main")) == before


def test_bad_role_and_thread_are_rejected() -> None:
    window = ContextWindow()
    with pytest.raises(InvalidMessage, match="role"):
        window.append("main", "system", "hello")
    with pytest.raises(InvalidMessage, match="thread"):
        window.append("", "user", "hello")
    assert len(window.log) == 0


def test_unknown_topic_ids_are_clear_errors() -> None:
    window = filled_window()
    for bad in (99999, -1, "3", None, True):
        with pytest.raises(UnknownTopic):
            window.drop(bad)  # type: ignore[arg-type]


def test_memory_block_structure_is_ours() -> None:
    window = filled_window()
    text = window.render(thread_id="main").messages[0]["content"]
    assert text.startswith(MEMORY_HEADER)


def test_render_digest_cache_stays_bounded() -> None:
    window = ContextWindow(WindowConfig(history_budget=256, summary_batch_tokens=10_000))
    for i in range(300):  # topics stay dirty, so every render digests their new messages
        window.append("t", "user", f"build_loader num_workers={i} in data/loader.py " * 4)
        window.append("t", "assistant", f"docker shm-size {i}g for the Dockerfile image " * 4)
        window.graduate()
        window.render(thread_id="t")
    assert len(window.summary_digests) <= 4 * window.config.max_topics + 65


def test_a_full_digest_cache_lets_the_least_recently_used_go() -> None:
    """A render keeps the digests it uses: a full cache loses its oldest entries, not all of
    them (every topic's digest built again on one turn was the slowest turn at 10,000
    messages)."""
    from topicforest.engine.digest import cached_digest as _digest

    from .helpers import exchange

    window = ContextWindow(WindowConfig(history_budget=256))
    for i in range(4):
        user, reply = exchange("loader", i)
        window.append("t", "user", user)
        window.append("t", "assistant", reply)
    window.graduate()
    (root,) = window.topic_ids()
    messages = window.log.get_many(window.uncovered(root))
    used = _digest(window, root, None, messages)
    limit = 4 * window.config.max_topics + 64
    for n in range(limit):  # older entries, then the used one again, then a new one
        window.summary_digests[(-1, n)] = used
    assert _digest(window, root, None, messages) is used
    _digest(window, root, "an earlier summary", messages)
    assert len(window.summary_digests) <= limit
    assert _digest(window, root, None, messages) is used


def test_a_grown_topic_has_its_digest_extended_not_built_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Back to back, the next question often comes before upkeep prepared the topic it just
    grew: its render extends the digest it had with the new messages (reading the old ones
    again made most of the slowest turns' extra time), and renders what a new one would."""
    from topicforest.engine.summarize.extractive import Digest

    from .helpers import exchange

    window = ContextWindow(WindowConfig(history_budget=512, max_topics=1))

    def chat(i: int) -> None:
        user, reply = exchange(("loader", "docker", "auth")[i % 3], i)
        window.append("main", "user", user)
        window.append("main", "assistant", reply)
        window.graduate()

    for i in range(12):
        chat(i)
    (root,) = window.topic_ids()
    window.render(thread_id="main")
    chat(12)
    assert window.is_dirty(root)
    built: list[object] = []
    build = Digest.__init__

    def counted(self: Digest, *args: Any, **kwargs: Any) -> None:
        built.append(args)
        build(self, *args, **kwargs)

    grown: list[Digest] = []
    extend = Digest.extended

    def extended_counted(self: Digest, *args: Any) -> Digest:
        grown.append(self)
        return extend(self, *args)

    monkeypatch.setattr(Digest, "__init__", counted)
    monkeypatch.setattr(Digest, "extended", extended_counted)
    extended = window.render(thread_id="main")
    assert built == [] and len(grown) == 1  # the grown topic's digest was extended
    window.summary_digests.clear()
    assert window.render(thread_id="main") == extended
    assert built  # built anew once the cache is gone


def test_a_title_leads_with_the_topic_files() -> None:
    """Titles are what the Topics view shows: files first (by name: the tooltip has the path),
    then the code names."""
    window = ContextWindow(WindowConfig(history_budget=256))
    for i in range(6):
        window.append("t", "user", f"Why does parse_header fail in src/http/parser.py? try {i}")
        window.append("t", "assistant", "parse_header reads its buffer; see parse_header.")
    window.append("t", "user", "thanks")
    window.graduate()
    (root,) = window.forest.live_roots()
    assert window.title(root) == "parser.py · parse_header"


def test_uncovered_members_follow_graduation_summaries_and_merges() -> None:
    """`uncovered` is remembered between renders; it must always equal a fresh scan of the
    members (in conversation order), whatever changed: new members, full and partial summaries,
    merges."""
    from dataclasses import replace

    from topicforest.engine.summarize.base import SummaryResult

    from .helpers import exchange

    window = ContextWindow(WindowConfig(history_budget=512, max_topics=2))

    def check() -> None:
        for root in window.forest.live_roots():
            summary = window.summaries.get(root)
            covered = summary.covered if summary else set()
            scan = sorted(m for m in window.forest.members(root) if m not in covered)
            assert window.uncovered(root) == scan

    for i in range(12):
        for topic in ("loader", "docker", "auth"):
            user, reply = exchange(topic, i)
            window.append("main", "user", user)
            window.append("main", "assistant", reply)
            window.graduate()
            check()
        for job in window.summary_jobs(force=True):
            if i % 2:  # a partial batch: the topic stays dirty with fewer uncovered members
                job = replace(job, message_ids=job.message_ids[:1])
            window.apply_summary(job, SummaryResult(f"summary {i}", "test"))
            check()
    assert any(window.uncovered(r) for r in window.forest.live_roots())  # partial batches left some
    # Re-clustering moves an exchange not yet summarized out of the middle of a topic.
    moved = 0
    for unit in list(window.refiner.units.values()):
        source = window.forest.find(unit.ids[0])
        target = next((r for r in window.forest.live_roots() if r != source), None)
        members = window.forest.members(source)
        middle = set(unit.ids) <= set(members[:-2]) and set(unit.ids) & set(
            window.uncovered(source)
        )
        if middle and target is not None and window.move_unit(unit, source, target):
            moved += 1
            check()
    assert moved
    # A summary replaced by one that covers less (a topic summarized afresh): all are new again.
    root = next(r for r in window.forest.live_roots() if r in window.summaries)
    del window.summaries[root]
    check()
    (job,) = [j for j in window.summary_jobs(force=True) if j.topic_id == root]
    window.apply_summary(replace(job, message_ids=job.message_ids[:2]), SummaryResult("s", "t"))
    check()


def test_a_lagging_summary_is_digested_from_the_newest_new_messages_only() -> None:
    """Thousands of messages waiting for a summary (a slow model, a busy team) are not all read
    and digested by every render: a room that cannot hold them gets a digest of the newest."""
    from topicforest.engine.render import DIGEST_MESSAGES

    from .helpers import CountingLog, exchange

    log = CountingLog()
    window = ContextWindow(WindowConfig(history_budget=512, max_topics=1), log=log)
    for i in range(3 * DIGEST_MESSAGES):
        user, reply = exchange(("loader", "docker", "auth")[i % 3], i)
        window.append("main", "user", user)
        window.append("main", "assistant", reply)
        window.graduate()
    (root,) = window.topic_ids()
    assert window.is_dirty(root) and len(window.uncovered(root)) > 4 * DIGEST_MESSAGES
    log.read.clear()
    rendered = window.render(thread_id="main")  # no query, no key lines collected: a digest
    assert rendered.topics and rendered.topics[0].id == root
    newest = set(window.uncovered(root)[-DIGEST_MESSAGES:])
    assert set(log.read) == newest


def test_prepare_render_does_ahead_what_the_next_question_would_do_first() -> None:
    """Upkeep prepares the render after each change (`prepare_render`): the next question's
    render then builds no digest of a grown topic, and renders exactly what it would have."""
    from .helpers import exchange

    def grown() -> ContextWindow:
        window = ContextWindow(WindowConfig(history_budget=512, max_topics=1))
        for i in range(40):
            user, reply = exchange(("loader", "docker", "auth")[i % 3], i)
            window.append("main", "user", user)
            window.append("main", "assistant", reply)
            window.graduate()
        return window

    prepared, unprepared = grown(), grown()
    (root,) = prepared.topic_ids()
    assert prepared.is_dirty(root)
    prepared.prepare_render()
    built = {id(d) for d in prepared.summary_digests.values()}
    assert built  # the grown topic's digest, made before any question
    question = "and what about kubernetes?"  # recalls nothing: only recall depends on it
    with_prepare = prepared.render(question, thread_id="main")
    assert {id(d) for d in prepared.summary_digests.values()} == built
    without = unprepared.render(question, thread_id="main")
    assert unprepared.summary_digests  # built by the question's render instead
    assert with_prepare == without


def test_uncovered_members_stay_in_conversation_order_when_a_merge_appends_out_of_order() -> None:
    """A merge appends the other topic's member list, itself out of order after a merge of its
    own ([7, 8, 5, 6]); the remembered uncovered members must come out sorted all the same."""
    window = ContextWindow(WindowConfig(history_budget=4096))
    for topic, n in (("loader", 0), ("loader", 1), ("docker", 0), ("auth", 0)):
        for role, text in zip(("user", "assistant"), exchange(topic, n), strict=True):
            window.append("main", role, text)
    window.flush_thread("main")
    loader, docker, auth = (window.forest.find(i) for i in (1, 5, 7))
    if len({loader, docker, auth}) < 3 or window.forest.members(loader) != [1, 2, 3, 4]:
        pytest.fail("the test did not manage to make three topics")
    joined = window._union(auth, docker)  # equal sizes: the first keeps its list first
    assert window.forest.members(joined) == [7, 8, 5, 6]
    assert window.uncovered(loader) == [1, 2, 3, 4]  # remembered
    survivor = window._union(loader, joined)
    assert window.uncovered(survivor) == [1, 2, 3, 4, 5, 6, 7, 8]
