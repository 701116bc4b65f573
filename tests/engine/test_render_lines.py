"""What a render quotes: never an empty summary line (a summary cut to nothing is left out),
never the same key line twice.

A recalled message keeps its own blank lines; the line after a topic's header is its summary."""

from __future__ import annotations

import asyncio
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.eval.systems import thread_of

from ..conftest import requires_shared_eval, shared_conversations
from .helpers import filled_window
from .replays import SAMPLE, fact_renders, replay_offline


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
