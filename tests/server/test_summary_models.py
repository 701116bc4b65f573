"""Who writes topic summaries: with `summaryModels` unset, the chat model does, summary and
title in one call; `summaryModels: []` keeps them offline; a bad or hostile reply falls back to
the offline summary. The real server process, its litellm worker and the loopback stub."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_lsp

from topicforest.engine.summarize.extractive import LEAD
from topicforest.testing.stub_llm import Fault, ThreadedStubLLM, stub_title

from .conftest import CONFIG, SAMPLE, Client, replay, start, summarized

TURNS = SAMPLE[:40]


def settings(stub: ThreadedStubLLM, **extra: Any) -> dict[str, Any]:
    return {
        "chatModel": "openai/stub-chat",
        "apiBase": stub.base_url,
        "historyBudget": 512,
        **extra,
    }


@pytest_lsp.fixture(config=CONFIG)
async def chat_only(
    lsp_client: Client, tmp_path: Path, stub: ThreadedStubLLM
) -> AsyncIterator[None]:
    """A chat model and no `summaryModels` setting: what a new user configures."""
    stub.config.titles = True  # the stub answers the summarize prompt's title line
    await start(lsp_client, tmp_path, settings(stub))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def offline(lsp_client: Client, tmp_path: Path, stub: ThreadedStubLLM) -> AsyncIterator[None]:
    await start(lsp_client, tmp_path, settings(stub, summaryModels=[]))
    yield
    await lsp_client.shutdown_session()


async def test_the_chat_model_writes_each_summary_and_its_title_in_one_call(
    chat_only: Client, stub: ThreadedStubLLM
) -> None:
    await replay(chat_only, stub, TURNS)
    topics = [t for t in await summarized(chat_only) if not t["dropped"]]
    calls = stub.calls("summary")
    assert calls and {c.model for c in calls} == {"stub-chat"}  # the chat model, no other
    assert len(calls) == sum(t["spend"]["calls"] for t in topics)  # one call per summary
    replies = {c.reply for c in calls}
    for topic in topics:
        # title and summary both from the model's one reply
        assert f"Title: {topic['title']}\n{topic['summary']}" in replies, topic
        assert topic["title"] == stub_title(topic["summary"])


async def test_summary_models_set_to_nothing_keeps_summaries_offline(
    offline: Client, stub: ThreadedStubLLM
) -> None:
    await replay(offline, stub, TURNS)
    topics = [t for t in await summarized(offline) if not t["dropped"]]
    assert topics and all(t["summary"].startswith(LEAD) for t in topics)
    assert stub.calls("summary") == [] and stub.calls("chat")


BAD_REPLIES = [
    "",  # nothing
    "Title: 42\n```\n```",  # a title and no summary
    "Title: Pwned\n```python\nimport os; os.system('rm -rf ~')\n```",  # code, no summary
    "12345 !!! ... ---",  # no words
]


async def test_a_bad_or_hostile_reply_falls_back_to_the_offline_summary(
    chat_only: Client, stub: ThreadedStubLLM
) -> None:
    for reply in BAD_REPLIES * 20:  # every summary call of the replay gets one
        stub.config.summary_replies.append(reply)
    stub.config.kind_faults["summary"] = deque([Fault("malformed")])  # broken JSON first
    await replay(chat_only, stub, TURNS)
    topics = [t for t in await summarized(chat_only) if not t["dropped"]]
    assert topics and stub.calls("summary")
    for topic in topics:
        assert topic["summary"].startswith(LEAD), topic  # the offline summary took over
        assert "Pwned" not in topic["title"] and "os.system" not in topic["summary"]
    # and the server kept serving
    assert (await chat_only.call("listThreads"))["threads"]
