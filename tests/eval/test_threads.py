"""Thread replay: a message's `thread` is its own chat thread in the window (real litellm)."""

from __future__ import annotations

from typing import Any

import pytest

from topicforest.engine.render import RenderedContext
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.engine.window import ContextWindow
from topicforest.eval.dataset import Conversation, DatasetError, parse_conversation
from topicforest.eval.run import STUB_SUMMARY_MODEL
from topicforest.eval.systems import run_flat, run_topic_forest
from topicforest.eval.waiting import _exchanges
from topicforest.testing.stub_llm import StubLLM

TURNS = [
    ("main", "user", "T1", "The API in src/server.ts listens on port 3000 with Fastify."),
    ("main", "assistant", "T1", "Keep port 3000; register fastify-cors in src/server.ts."),
    ("auth", "user", "T2", "JWT expiry is 15m in src/auth/jwt.ts. Too short?"),
    ("main", "user", "T1", "Should the server use HTTP/2?"),
    ("auth", "assistant", "T2", "Make it 30m in src/auth/jwt.ts and add a refresh token."),
    ("main", "assistant", "T1", "Yes, enable http2: true in src/server.ts."),
]


def threaded() -> Conversation:
    return parse_conversation(
        {
            "id": "threads",
            "topics": [{"id": "T1", "name": "server"}, {"id": "T2", "name": "auth"}],
            "messages": [
                {"index": i, "thread": t, "role": r, "topic": topic, "content": c}
                for i, (t, r, topic, c) in enumerate(TURNS)
            ],
            "facts": [
                {
                    "id": "F1",
                    "topic": "T2",
                    "msg_index": 4,
                    "superseded_msg_index": 2,
                    "question": "What JWT expiry did we choose?",
                    "answer": "30m",
                    "must_contain": ["30m"],
                },
                {
                    "id": "F2",
                    "topic": "T1",
                    "msg_index": 5,
                    "superseded_msg_index": None,
                    "question": "Does the server use HTTP/2?",
                    "answer": "yes",
                    "must_contain": ["http2: true"],
                },
            ],
        }
    )


def test_the_loader_keeps_each_messages_thread() -> None:
    conv = threaded()
    assert [m.thread for m in conv.messages] == [t for t, *_ in TURNS]
    assert conv.threads() == ["main", "auth"]
    bad = {"id": "x", "messages": [{"index": 0, "role": "user", "content": "hi", "thread": 3}]}
    with pytest.raises(DatasetError, match="thread must be a non-empty string"):
        parse_conversation({**bad, "facts": []})


def test_the_waiting_replay_pairs_each_question_with_its_own_threads_reply() -> None:
    pairs = [(e.thread, e.answer) for e in _exchanges(threaded())]
    assert pairs == [("main", TURNS[1][3]), ("auth", TURNS[4][3]), ("main", TURNS[5][3])]


@pytest.mark.usefixtures("stub_key")
async def test_each_thread_is_replayed_into_its_own_chat_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    appended: list[str] = []
    rendered: list[tuple[str | None, str | None]] = []
    original_append, original_render = ContextWindow.append, ContextWindow.render

    def append(self: ContextWindow, thread_id: str, *args: Any, **kwargs: Any) -> Any:
        appended.append(thread_id)
        return original_append(self, thread_id, *args, **kwargs)

    def render(self: ContextWindow, query: str | None = None, **kwargs: Any) -> RenderedContext:
        rendered.append((kwargs.get("thread_id"), query))
        return original_render(self, query, **kwargs)

    monkeypatch.setattr(ContextWindow, "append", append)
    monkeypatch.setattr(ContextWindow, "render", render)
    conv = threaded()
    async with StubLLM() as stub:
        summarizer = LiteLLMSummarizer(STUB_SUMMARY_MODEL, api_base=stub.base_url)
        forest = await run_topic_forest(conv, summarizer, 2048)
        flat = await run_flat(conv, summarizer, 2048)

    assert appended == [t for t, *_ in TURNS]  # each message into its own thread, index order
    turns = [(t, c) for t, r, _, c in TURNS if r == "user"]
    assert rendered[: len(turns)] == turns  # every user turn renders for its own thread
    # The final renders (no query, then one per fact) are all for the last message's thread.
    assert rendered[len(turns) :] == [
        ("main", None),
        ("main", "What JWT expiry did we choose?"),
        ("main", "Does the server use HTTP/2?"),
    ]
    # Nothing graduated at this budget: the final render shows main's hot zone, not auth's.
    assert "http2: true" in forest.context_no_query and "30m" not in forest.context_no_query
    assert forest.traces["F1"].hot and forest.traces["F1"].mode_no_query == (
        "another thread's hot zone"
    )
    # Clustering still covers every message (all threads flushed at the end).
    assert len(forest.clusters) == len(TURNS)
    # Flat keeps one history of every thread in index order.
    assert flat.context == "\n\n".join(c for *_, c in TURNS)
