"""Fixtures for the evaluation tests: the tiny conversation and a shared-eval locator."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicforest.eval.dataset import Conversation, load_conversation

TINY = Path(__file__).with_name("tiny_conversation.json")
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "eval"


@pytest.fixture
def tiny_path() -> Path:
    return TINY


@pytest.fixture
def tiny() -> Conversation:
    return load_conversation(TINY)


@pytest.fixture
def shared_eval() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"the shared dev set is not present at {SHARED}")
    return SHARED


@pytest.fixture
def stub_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from topicforest.testing.stub_llm import STUB_API_KEY

    monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)
