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
from pathlib import Path

import pytest

from topicforest.engine.config import WindowConfig
from topicforest.engine.window import ContextWindow

AIDER17 = Path(__file__).resolve().parents[2].parent / "shared" / "external" / "aider17"
CONVERSATIONS = sorted((AIDER17 / "conversations").glob("*.json")) if AIDER17.is_dir() else []


def largest_share(path: Path) -> float:
    window = ContextWindow(WindowConfig(history_budget=2048))
    ids = []
    for message in json.loads(path.read_text(encoding="utf-8"))["messages"]:
        ids.append(window.append("main", message["role"], message["content"]).id)
        window.graduate()
        window.refine(budget_seconds=math.inf)
    window.flush_thread("main")
    window.refine(budget_seconds=math.inf, settle=True)
    while window.refine_pending:
        window.refine(budget_seconds=math.inf)
    return max(Counter(window.forest.find(i) for i in ids).values()) / len(ids)


@pytest.mark.skipif(not CONVERSATIONS, reason=f"the external set is not present at {AIDER17}")
def test_no_catch_all_topic_on_conversations_nobody_here_wrote() -> None:
    shares = [largest_share(path) for path in CONVERSATIONS]
    print(f"\nlargest topic: median {statistics.median(shares):.0%}, max {max(shares):.0%}")
    assert statistics.median(shares) <= 0.35
    assert max(shares) <= 0.5
