"""A stored window's render reads: its recall index, built in slices by upkeep or at once by
the first search, and the message texts it quotes, read in one statement."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from topicforest.engine import ContextWindow
from topicforest.store import Store, stored_recall

from .conftest import Memory, sample_messages, synthetic


def chat(store: Store, messages: list[tuple[str, str]], offset: int) -> None:
    window = store.window
    assert window is not None
    for i, (role, content) in enumerate(messages):
        window.append(f"t{(offset + i) // 60}", role, content, timestamp=offset + i)
        window.graduate()


def index_of(window: ContextWindow) -> tuple[dict[str, list[int]], dict[int, float]]:
    recall = window.recall
    return {t: sorted(ids) for t, ids in recall.postings.items()}, dict(recall.root_lengths)


ROWS = 7


def test_recall_built_in_slices_while_others_graduate_equals_one_built_at_once(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stored_recall, "RECALL_SLICE_ROWS", ROWS)
    messages = sample_messages() + list(synthetic(160))
    a = memory.open()
    wa = a.open_window()
    chat(a, messages[:120], 0)
    b = memory.open()
    wb = b.open_window()
    # Meanwhile another window graduates more: old messages (a thread's hot zone, which the
    # build has passed once it read one graduated message after them) and new ones.
    hot = [m.id for m in wa.hot_messages("t0")]
    passed = 1 + sum(1 for m in wa.state().planted if m < max(hot))
    slices = 0
    while not wb.recall.warm(0.0):  # one slice per call
        slices += 1
        if slices * ROWS >= passed and hot:
            wa.flush_thread("t0")
            chat(a, messages[120:], 120)
            assert b.refresh()
            hot = []
    assert not hot, "the build should have been interrupted"
    fresh = memory.open().open_window()
    query = Counter({"docker": 1, "healthcheck": 1, "jwt": 1})
    assert fresh.recall.search(fresh.recall.weights(query, fresh.embedder.idf))  # built now
    assert index_of(wb) == index_of(fresh)
    assert all(len(ids) == len(set(ids)) for ids in index_of(wb)[0].values())


def test_a_render_reads_what_it_quotes_in_one_statement(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dirty topics' unsummarized members come with the recalled exchanges: on a team database
    each read is a round trip, and a render after other windows' commits made one per topic."""
    a = memory.open()
    wa = a.open_window()
    chat(a, sample_messages() + list(synthetic(120)), 0)
    assert sum(wa.is_dirty(root) for root in wa.topic_ids()) >= 2
    window = memory.open().open_window()  # nothing of the log read yet
    window.recall.warm(60.0)
    statements: list[str] = []
    rows = Store.rows

    def counted(store: Store, sql: str, params: Sequence[object] = ()) -> list[Any]:
        statements.append(sql)
        return rows(store, sql, params)

    monkeypatch.setattr(Store, "rows", counted)
    rendered = window.render(query="docker healthcheck pg_isready", thread_id="t0")
    assert rendered.topics and len(statements) == 1, statements
