"""Fixtures for the stub LLM tests: a running stub and litellm pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType

import pytest

from topicforest.engine.llm import load_litellm
from topicforest.testing.stub_llm import STUB_API_KEY, StubLLM


@pytest.fixture(scope="session")
def litellm() -> ModuleType:
    return load_litellm()


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubLLM]:
    monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)  # litellm's openai provider wants one
    async with StubLLM(chunks=5) as server:
        yield server
