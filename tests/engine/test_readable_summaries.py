"""Offline summaries a person can read: short first-person sentences that keep names and
numbers, never a comma-separated keyword dump, never a pasted line of code.

Checked on every summary the offline summarizer writes while the bundled sample and the dev
conversations (../shared/eval, skipped where absent) are replayed, and on small cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicforest.engine.messages import Message
from topicforest.engine.summarize.extractive import Digest

from ..conftest import requires_shared_eval, shared_conversations
from .readability import code_line, is_code, keyword_dump
from .replays import SAMPLE, replay_offline


def unreadable(summaries: list[str]) -> list[str]:
    found = []
    for text in summaries:
        if (dump := keyword_dump(text)) is not None:
            found.append(f"keyword dump {dump!r} in: {text[:200]}")
        if (line := code_line(text)) is not None:
            found.append(f"code line {line!r} in: {text[:200]}")
    return found


def test_the_checker_catches_what_the_issue_reported() -> None:
    reported = (
        "I asked you about main.rs, src/config.rs, Cargo.toml. You said: "
        "ExitCode::from(EXIT_ERROR) Also mentioned: MinIO, 4.5.4, src/cli.rs, ArgAction, --jobs."
    )
    assert keyword_dump(reported) and keyword_dump("It uses MinIO, 4.5.4, src/cli.rs, ArgAction, x")
    assert is_code("let len = file.metadata().await?.len();")
    assert is_code("ExitCode::from(EXIT_ERROR)")
    fine = (
        'I asked you about src/s3.rs and reqwest. You said: Pin `reqwest = "0.12.4"` and set '
        "`read_timeout` to 60 s. You showed src/multipart.rs with `MAX_PARTS: u64 = 10_000`."
    )
    assert unreadable([fine]) == []


def test_the_sample_summaries_are_sentences() -> None:
    replay = replay_offline(SAMPLE)
    assert replay.summaries  # the replay summarized its topics
    assert unreadable(replay.summaries) == []


@requires_shared_eval
@pytest.mark.parametrize("path", shared_conversations(), ids=lambda p: p.stem)
def test_the_dev_set_summaries_are_sentences(path: Path) -> None:
    replay = replay_offline(path)
    assert replay.summaries
    assert unreadable(replay.summaries) == []


def _messages(*texts: str) -> list[Message]:
    return [
        Message(i + 1, "t", "user" if i % 2 == 0 else "assistant", text, float(i), len(text) // 3)
        for i, text in enumerate(texts)
    ]


def test_a_code_block_is_said_in_a_sentence_that_keeps_its_values_and_file() -> None:
    digest = Digest(
        None,
        _messages(
            "the pool runs out under load, what should app/db.py use?",
            "Raise the pool in `app/db.py`:\n```python\n# app/db.py\n"
            "engine = create_engine(url, pool_size=20, max_overflow=5, poolclass=QueuePool)\n"
            "POOL_RECYCLE = 1800\n```\nThat holds 25 connections at most.",
        ),
    )
    text = digest.summary(200)
    assert unreadable([text]) == [], text
    for name in ("app/db.py", "pool_size=20", "max_overflow=5", "POOL_RECYCLE = 1800", "25"):
        assert name in text, (name, text)
    assert text.startswith("I asked you about app/db.py")
