"""What a render quotes: never an empty summary line (a summary cut to nothing is left out),
never the same key line twice, always the question's best match.

A recalled message keeps its own blank lines; the line after a topic's header is its summary."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from topicforest.engine import render
from topicforest.engine.render import KEPT_RECALLED
from topicforest.engine.render_recall import Recalled, recall_exchanges, recall_hits
from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.engine.window import ContextWindow
from topicforest.eval.systems import thread_of

from ..conftest import requires_shared_eval, shared_conversations
from .helpers import filled_window
from .replays import HELD_OUT, SAMPLE, fact_renders, replay_offline


def empty_summary_lines(text: str) -> list[str]:
    return [
        header
        for header, line in pairwise(text.splitlines())
        if header.startswith("## ") and line.strip() in ("|", "")
    ]


@pytest.mark.parametrize("query", ["build_loader num_workers", "Dockerfile shm-size"])
def test_a_summary_with_no_room_left_after_recall_is_left_out_not_quoted_empty(query: str) -> None:
    window = filled_window(budget=384, rounds=6)
    asyncio.run(resolve_round(window, ExtractiveSummarizer(), force=True))
    rendered = window.render(query=query)
    assert rendered.topics  # the recalled originals are there
    assert empty_summary_lines(rendered.text()) == []


def replayed_empty_lines(path: Path) -> list[str]:
    return [
        line for text in fact_renders(replay_offline(path)) for line in empty_summary_lines(text)
    ]


def test_the_sample_query_renders_have_no_empty_summary_line() -> None:
    assert replayed_empty_lines(SAMPLE) == []


@requires_shared_eval
@pytest.mark.parametrize("path", shared_conversations(), ids=lambda p: p.stem)
def test_the_dev_set_query_renders_have_no_empty_summary_line(path: Path) -> None:
    assert replayed_empty_lines(path) == []


def repeated_key_lines(path: Path) -> list[str]:
    """Key lines the no-query render at the end of the replay shows more than once."""
    replay = replay_offline(path)
    thread = thread_of(replay.conv.messages[-1])
    text = replay.window.render(thread_id=thread).text()
    shown = Counter(line for line in text.splitlines() if line.startswith("| - "))
    return [line for line, times in shown.items() if times > 1]


@requires_shared_eval
@pytest.mark.parametrize("path", shared_conversations(), ids=lambda p: p.stem)
def test_the_dev_set_no_query_renders_show_a_key_line_once(path: Path) -> None:
    assert repeated_key_lines(path) == []


@requires_shared_eval
@pytest.mark.parametrize("path", shared_conversations(), ids=lambda p: p.stem)
def test_the_dev_set_no_query_renders_leave_no_topic_out(path: Path) -> None:
    # A small topic whose only key lines were longer than its room rendered nothing and was
    # left out (infra, ios): it shows its summary or digest instead.
    replay = replay_offline(path)
    rendered = replay.window.render(thread_id=thread_of(replay.conv.messages[-1]))
    assert rendered.omitted_topics == []


def best_matches_left_out(path: Path) -> list[str]:
    """Questions of three words taken from the conversation's messages whose best-matching
    message is in a topic the render left out."""
    replay = replay_offline(path)
    window, thread = replay.window, thread_of(replay.conv.messages[-1])
    left_out = []
    for question in three_word_questions(window, len(replay.conv.messages)):
        best = recall_hits(window, window.embedder.embed_query(question)).best
        rendered = window.render(query=question, thread_id=thread)
        if best is not None and window.forest.find(best) in rendered.omitted_topics:
            left_out.append(question)
    return left_out


def three_word_questions(window: ContextWindow, messages: int) -> list[str]:
    """Questions of three words taken from every third graduated message, every 7 words."""
    graduated = sorted(m for m in range(1, messages + 1) if m in window.forest)
    questions = []
    for message in window.log.get_many(graduated[::3]):
        words = re.findall(r"[A-Za-z_]{6,}", message.content)
        questions += [" ".join(words[at : at + 3]) for at in range(0, len(words) - 2, 7)]
    return questions


def test_the_topic_of_a_questions_best_match_is_never_left_out() -> None:
    # Topics ranked before it (by their centroid, then recency) spent its room on their
    # summaries: "discovery upload dfu_application" lost the DFU topic that holds it.
    assert best_matches_left_out(HELD_OUT[0]) == []


def test_the_two_best_recalled_topics_are_never_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # Topics ranked before them spent the room their recalled originals were given on their
    # own summaries: 59 of these questions lost one of them, the best match's topic kept.
    recalled: list[list[int]] = []

    def recording(*args: Any, **kwargs: Any) -> dict[int, list[Recalled]]:
        chosen = recall_exchanges(*args, **kwargs)
        recalled.append([root for root, lines in chosen.items() if lines][:KEPT_RECALLED])
        return chosen

    monkeypatch.setattr(render, "recall_exchanges", recording)
    replay = replay_offline(HELD_OUT[0])
    window, thread = replay.window, thread_of(replay.conv.messages[-1])
    left_out = []
    for question in three_word_questions(window, len(replay.conv.messages)):
        recalled.clear()
        rendered = window.render(query=question, thread_id=thread)
        if any(root in rendered.omitted_topics for root in recalled[-1]):
            left_out.append(question)
    assert left_out == []


def test_a_topic_header_is_its_id_title_and_pin_without_a_message_count() -> None:
    """A count ("(36 messages)") cost each block a few tokens (a key line's worth over ten
    topics) and told a model nothing it is asked about; pinned still shows."""
    window = filled_window(budget=2048)
    asyncio.run(resolve_round(window, ExtractiveSummarizer(), force=True))
    root = window.forest.live_roots()[0]
    window.pin(root)
    for query in (None, "build_loader num_workers"):
        text = window.render(query=query).text()
        headers = [line for line in text.splitlines() if line.startswith("## Topic ")]
        assert headers
        assert not any(re.search(r"\(\d+ messages\)", header) for header in headers)
        assert f"## Topic {root}: {window.title(root)} [pinned]" in headers
