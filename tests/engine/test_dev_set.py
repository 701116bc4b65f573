"""The engine on the labelled dev conversations in ../shared/eval (skipped where absent)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.eval.metrics import adjusted_rand_index, purity

from ..conftest import load_conversation, requires_shared_eval, shared_conversations

pytestmark = requires_shared_eval


def replay(
    conversation: dict[str, Any], budget: int = 2048
) -> tuple[ContextWindow, dict[int, int]]:
    """Append every message as a chat would, with the background summary round after each."""
    window = ContextWindow(WindowConfig(history_budget=budget))
    ids: dict[int, int] = {}
    summarizer = ExtractiveSummarizer()
    for message in conversation["messages"]:
        stored = window.append(
            "chat", message["role"], message["content"], timestamp=message["index"]
        )
        ids[message["index"]] = stored.id
        window.graduate()
        window.refine()  # as upkeep does: one bounded slice of re-clustering
        asyncio.run(resolve_round(window, summarizer))  # as the background loop does
        window.prepare_key_lines()
    return window, ids


@pytest.mark.parametrize("path", shared_conversations(), ids=lambda p: Path(p).stem)
def test_topics_are_few_and_far_purer_than_chance(path: Path) -> None:
    conversation = load_conversation(path)
    window, ids = replay(conversation)
    window.flush_thread("chat")
    assert len(window.forest.live_roots()) <= window.config.max_topics
    labelled = [m for m in conversation["messages"] if m["topic"]]  # chatter left out
    labels = [m["topic"] for m in labelled]
    clusters = [window.forest.find(ids[m["index"]]) for m in labelled]
    chance = max(labels.count(t) for t in set(labels)) / len(labels)
    p, ari = purity(clusters, labels), adjusted_rand_index(clusters, labels)
    print(f"\n{path.stem}: purity {p:.3f} (chance {chance:.3f}), ARI {ari:.3f}")
    assert p >= chance + 0.4
    assert ari >= 0.35


@pytest.mark.parametrize("path", shared_conversations(), ids=lambda p: Path(p).stem)
def test_planted_facts_survive_in_the_render(path: Path) -> None:
    conversation = load_conversation(path)
    window, _ = replay(conversation)
    facts = conversation["facts"]

    def survives(text: str, fact: dict[str, Any]) -> bool:
        return all(s.lower() in text.lower() for s in fact["must_contain"])

    plain = window.render(thread_id="chat")
    assert plain.tokens <= plain.budget
    without_query = sum(survives(plain.text(), f) for f in facts) / len(facts)
    with_query = sum(
        survives(window.render(query=f["question"], thread_id="chat").text(), f) for f in facts
    ) / len(facts)
    print(f"\n{path.stem}: facts kept {without_query:.0%} without query, {with_query:.0%} with")
    assert with_query >= 0.75
    assert without_query >= 0.3
