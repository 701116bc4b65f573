"""Topics of a person's size on conversations nobody here wrote (../shared/external/aider17,
skipped where absent): each is one GitHub issue discussed for 200 messages, in phases that share
the issue's vocabulary throughout. Before re-clustering centered its vectors and halved large
groups, the largest topic held a median 48% of a conversation (up to 82%): one catch-all.
Clustering only (no summaries): the replay graduates and re-clusters after every message, as
upkeep does, then settles as it does when the user is away."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from topicforest.engine.clustering import MIN_TOPIC_EXCHANGES, agglomerate, fragment_size
from topicforest.engine.config import WindowConfig
from topicforest.engine.window import ContextWindow
from topicforest.eval.dataset import Conversation, back_to_back_pairs, load_conversation
from topicforest.eval.run import clustering

from .helpers import finished

AIDER17 = Path(__file__).resolve().parents[2].parent / "shared" / "external" / "aider17"
CONVERSATIONS = sorted((AIDER17 / "conversations").glob("*.json")) if AIDER17.is_dir() else []


def replayed(messages: Iterable[tuple[str, str]]) -> tuple[ContextWindow, list[int]]:
    """A window that took (role, content) messages one by one, re-clustering after each as
    upkeep does, then settled as it is when the user is away; and the messages' ids."""
    window = ContextWindow(WindowConfig(history_budget=2048))
    ids = []
    for role, content in messages:
        ids.append(window.append("main", role, content).id)
        window.graduate()
        window.refine(budget_seconds=math.inf)
    window.flush_thread("main")
    window.refine(budget_seconds=math.inf, settle=True)
    while window.refine_pending:
        window.refine(budget_seconds=math.inf)
    return window, ids


def largest_share(path: Path) -> float:
    messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
    window, ids = replayed((m["role"], m["content"]) for m in messages)
    return max(Counter(window.forest.find(i) for i in ids).values()) / len(ids)


@pytest.mark.skipif(not CONVERSATIONS, reason=f"the external set is not present at {AIDER17}")
def test_no_catch_all_topic_on_conversations_nobody_here_wrote() -> None:
    shares = [largest_share(path) for path in CONVERSATIONS]
    print(f"\nlargest topic: median {statistics.median(shares):.0%}, max {max(shares):.0%}")
    assert statistics.median(shares) <= 0.35
    assert max(shares) <= 0.5


def test_a_long_window_keeps_its_small_subjects_apart() -> None:
    """A window of 310 exchanges: one subject discussed in 200 of them and eleven in 10 each.
    Each small subject is alike within itself (0.6) and unlike the rest (0.0). When a fragment
    was any group under 7% of the window (here 22 exchanges), the eleven merged into a few
    catch-alls; a subject of 10 exchanges is a topic however long the window is."""
    blocks = [list(range(200))] + [list(range(200 + 10 * k, 210 + 10 * k)) for k in range(11)]
    block_of = {item: b for b, items in enumerate(blocks) for item in items}
    items = sorted(block_of)
    similarity = {
        (a, b): 0.6 if block_of[a] == block_of[b] else 0.0
        for i, a in enumerate(items)
        for b in items[i + 1 :]
    }
    groups = finished(agglomerate(items, similarity, max_groups=12))
    assert sorted(sorted(g) for g in groups.values()) == sorted(blocks)
    assert fragment_size(310, MIN_TOPIC_EXCHANGES) == 6  # not 22: capped, not a share alone


DEV = Path(__file__).resolve().parents[2].parent / "shared" / "eval"
DEV_CONVERSATIONS = sorted(DEV.glob("*.json")) if DEV.is_dir() else []


def back_to_back_purity(joined: Conversation) -> float:
    window, ids = replayed((m.role, m.content) for m in joined.messages)
    return clustering(joined, [window.forest.find(i) for i in ids]).purity  # chatter left out


@pytest.mark.skipif(len(DEV_CONVERSATIONS) < 2, reason=f"the dev set is not at {DEV}")
def test_a_workspace_memory_of_two_conversations_keeps_their_subjects_apart() -> None:
    """The dev conversations replayed in pairs (11-17 labelled subjects, 300-500 messages
    each): a workspace's memory outlives one session. With fragments defined as a share of the
    window alone and a cap of 12 topics, their subjects merged into catch-alls (purity 0.59
    pooled, 0.43 in the worst pair, against 0.72-0.96 for each conversation alone)."""
    pairs = back_to_back_pairs([load_conversation(p) for p in DEV_CONVERSATIONS])
    found = [back_to_back_purity(joined) for joined in pairs]
    print(f"\npurity by pair: {', '.join(f'{p:.2f}' for p in found)}")
    assert statistics.mean(found) >= 0.78
    assert min(found) >= 0.65


def test_a_first_session_s_unrelated_subjects_are_not_merged_into_one_topic() -> None:
    """Five exchanges on four subjects (pytest fixtures, SQLite twice, a React component, a
    Dockerfile), flushed and settled: re-clustering merged them all into one topic, since
    groups too small to have a cohesion merged whatever their likeness, and fragments joined a
    group they shared no word with. (The pytest exchange shares `.py` files with the SQLite
    ones and still joins them.)"""
    turns = [
        ("user", "How do I configure pytest fixtures in conftest.py for the parser tests?"),
        ("assistant", "Put shared fixtures in tests/conftest.py; pytest discovers them."),
        ("user", "The SQLite database locks when two writers commit; should I enable WAL?"),
        ("assistant", "Yes: PRAGMA journal_mode=WAL in store/db.py lets readers run."),
        ("user", "Now the React component UserTable.tsx re-renders on every keystroke. Why?"),
        ("assistant", "useMemo the rows in UserTable.tsx and wrap the handler in useCallback."),
        ("user", "Back to SQLite: the busy_timeout pragma, what value for store/db.py?"),
        ("assistant", "busy_timeout=5000 in store/db.py next to journal_mode=WAL works well."),
        ("user", "Dockerfile question: the python:3.12-slim build fails on gcc for psycopg."),
        ("assistant", "Install build-essential in the Dockerfile or use psycopg[binary] wheels."),
    ]
    window, ids = replayed(turns)
    topic = {i: window.forest.find(message_id) for i, message_id in enumerate(ids)}
    assert topic[2] == topic[6]  # SQLite, twice: one subject
    assert len({topic[2], topic[4], topic[8]}) == 3, window.forest.live_roots()
