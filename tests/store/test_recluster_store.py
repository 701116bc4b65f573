"""Re-clustering on a stored window: every move, merge and split is committed and reloads exactly
(member lists no longer only grow at their end)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from topicforest.store import Store

from .conftest import Memory, state_of

SAMPLE = Path(__file__).parents[2] / "server/topicforest/data/sample_conversation.json"


def replay_with_reclustering(store: Store) -> int:
    """Append the bundled sample as a chat does, with upkeep after each message; returns how
    many exchanges re-clustering moved, merged or split."""
    window = store.window
    assert window is not None
    changed = 0
    for message in json.loads(SAMPLE.read_text())["messages"]:
        window.append("chat", message["role"], message["content"], timestamp=message["index"])
        window.graduate()
        changed += len(window.refine(budget_seconds=math.inf))
    window.flush_thread("chat")
    while window.refine_pending:
        changed += len(window.refine(budget_seconds=math.inf))
    return changed


def test_reclustered_topics_reload_exactly(memory: Memory) -> None:
    store = memory.open()
    window = store.open_window()
    assert replay_with_reclustering(store) > 0, "the sample should need some re-clustering"
    assert window.refiner.rounds > 0
    before = state_of(window)
    store.close()

    reopened = memory.open()
    assert state_of(reopened.open_window()) == before


def test_another_window_follows_reclustering(memory: Memory) -> None:
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    wa.append("chat", "user", "Where do we keep the Alembic migrations?")
    assert b.refresh()  # b has loaded an early state; then a re-clusters a whole conversation
    replay_with_reclustering(a)
    assert b.refresh()
    assert state_of(wb) == state_of(wa)
    every = sorted(m for r in wa.forest.roots() for m in wa.forest.members(r))
    assert every == sorted(set(every))  # no message in two topics
    assert all(wb.forest.find(m) == wa.forest.find(m) for m in every)


def test_another_window_follows_each_move_as_it_happens(memory: Memory) -> None:
    """Loaded after every step, member lists that changed in the middle (an exchange moved
    out) are pieced together from the rows placed since, not read whole."""
    a, b = memory.open(), memory.open()
    wa, wb = a.open_window(), b.open_window()
    changed_mid_list = 0
    for message in json.loads(SAMPLE.read_text())["messages"]:
        before = {root: wa.forest.members(root) for root in wa.forest.roots()}
        wa.append("chat", message["role"], message["content"], timestamp=message["index"])
        wa.graduate()
        wa.refine(budget_seconds=math.inf)
        changed_mid_list += any(
            wa.forest.members(root)[: len(members)] != members
            for root, members in before.items()
            if wa.forest.is_root(root)
        )
        b.refresh()
        assert state_of(wb) == state_of(wa)
    assert changed_mid_list > 0, "the sample should move exchanges out of the middle of a topic"
