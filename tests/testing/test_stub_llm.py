"""The loopback stub through the real litellm HTTP path: JSON, SSE, summaries, faults, log."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import urllib.request
from types import ModuleType
from typing import Any

import pytest

from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import SummaryRequest, format_transcript
from topicforest.engine.summarize.cascade import CascadeSummarizer
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.engine.tokens import estimate_tokens
from topicforest.testing.stub_llm import (
    STUB_API_KEY,
    StubLLM,
    ThreadedStubLLM,
    echo_reply,
    parse_transcript,
    split_chunks,
    summary_capacity,
)

USER = [{"role": "user", "content": "Why does data/loader.py call build_loader twice?"}]


def _message(i: int, text: str) -> Message:
    role = "user" if i % 2 == 0 else "assistant"
    return Message(i + 1, "t", role, text, float(i), estimate_tokens(text))


CONVERSATION = [
    "The loader in data/loader.py is slow; build_loader uses num_workers=2.",
    "I raised num_workers to 8 and set pin_memory=True in build_loader. Epoch time fell to 41 s.",
    "ok thanks",
    "You're welcome.",
    "Which port does the MLflow server use? I think we settled on 5001 with MLFLOW_TRACKING_URI.",
    "Yes: mlflow server --port 5001, and MLFLOW_TRACKING_URI=http://localhost:5001 in .env.",
] * 6


async def test_chat_json_reply_and_usage_are_logged(stub: StubLLM, litellm: ModuleType) -> None:
    response = await litellm.acompletion(
        model="openai/stub-chat", api_base=stub.base_url, messages=USER
    )
    assert response.choices[0].message.content == echo_reply(USER)
    (record,) = stub.calls("chat")
    assert record.model == "stub-chat" and record.ok and not record.stream
    assert response.usage.prompt_tokens == record.prompt_tokens > 0
    assert response.usage.completion_tokens == record.completion_tokens > 0
    assert stub.usage() == (1, record.prompt_tokens, record.completion_tokens)


async def test_chat_streams_several_sse_chunks_with_final_usage(
    stub: StubLLM, litellm: ModuleType
) -> None:
    stream = await litellm.acompletion(
        model="openai/stub-chat",
        api_base=stub.base_url,
        messages=USER,
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces: list[str] = []
    usage: Any = None
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        usage = getattr(chunk, "usage", None) or usage
    assert len(pieces) >= 3
    assert "".join(pieces) == echo_reply(USER)
    (record,) = stub.requests
    assert record.stream and record.ok
    assert usage is not None and usage.completion_tokens == record.completion_tokens


BLOCK = "```python path=src/lexer.py\ndef tokenize(text):\n    return []\n```"


def test_a_fenced_block_in_the_question_is_proposed_back_verbatim() -> None:
    asked = f"Change it:\n\n{BLOCK}\n\nand ```inline``` is prose.\n\n```\nsecond\n```"
    reply = echo_reply([*USER, {"role": "assistant", "content": "ok"}, _user(asked)])
    assert reply.endswith(f"\n\n{BLOCK}\n")  # the first block, its path on the fence line
    assert "You asked" not in reply and "second" not in reply
    # a longer fence may hold a shorter one; an unclosed fence is no block
    nested = "````md\n```py\nx = 1\n```\n````"
    assert echo_reply([_user(f"see\n{nested}\nok")]).endswith(f"\n\n{nested}\n")
    assert echo_reply([_user("```py\nx = 1\n")]).startswith("You asked")
    # only the last user message counts
    assert echo_reply([_user(asked), *USER]).startswith('You asked: "Why does data/loader.py')


async def test_a_proposed_block_streams_whole(stub: StubLLM, litellm: ModuleType) -> None:
    messages = [_user(f"Make tokenize return a list:\n{BLOCK}")]
    stream = await litellm.acompletion(
        model="openai/stub-chat", api_base=stub.base_url, messages=messages, stream=True
    )
    pieces = [c.choices[0].delta.content async for c in stream if c.choices[0].delta.content]
    assert len(pieces) >= 2 and "".join(pieces) == echo_reply(messages)
    assert BLOCK in "".join(pieces)


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


async def test_both_endpoint_paths_answer(stub: StubLLM) -> None:
    for path in ("/v1/chat/completions", "/chat/completions"):
        url = stub.base_url.removesuffix("/v1") + path
        body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        # urllib is blocking; run it off the loop so the stub can answer.
        reply = await asyncio.to_thread(
            lambda r=request: urllib.request.urlopen(r, timeout=120).read()
        )
        assert b"You asked" in reply
    assert len(stub.requests) == 2


async def test_scripted_replies_come_first_then_echo(stub: StubLLM, litellm: ModuleType) -> None:
    stub.script("first scripted", "second scripted")
    texts = []
    for _ in range(3):
        r = await litellm.acompletion(model="openai/x", api_base=stub.base_url, messages=USER)
        texts.append(r.choices[0].message.content)
    assert texts == ["first scripted", "second scripted", echo_reply(USER)]


async def test_summary_is_capacity_limited_lead_and_deterministic(stub: StubLLM) -> None:
    messages = tuple(_message(i, t) for i, t in enumerate(CONVERSATION))
    request = SummaryRequest(messages=messages, target_tokens=400)
    summarizer = LiteLLMSummarizer("openai/stub-summary", api_base=stub.base_url)
    first = await summarizer.summarize(request)
    second = await summarizer.summarize(request)
    assert first.text == second.text
    capacity = summary_capacity(estimate_tokens(request.transcript()), 400)
    assert capacity < 400  # the 20% rule binds, not the request
    assert capacity // 2 < first.output_tokens <= capacity
    assert first.output_tokens == estimate_tokens(first.text)
    assert "5001" in first.text and "build_loader" in first.text
    assert [r.kind for r in stub.requests] == ["summary", "summary"]
    assert first.input_tokens == stub.requests[0].prompt_tokens


async def test_summary_respects_a_smaller_requested_size(stub: StubLLM) -> None:
    messages = tuple(_message(i, t) for i, t in enumerate(CONVERSATION))
    summarizer = LiteLLMSummarizer("openai/stub-summary", api_base=stub.base_url)
    result = await summarizer.summarize(SummaryRequest(messages=messages, target_tokens=50))
    assert 0 < result.output_tokens <= 50


@pytest.mark.parametrize(
    ("kind", "status", "error"),
    [
        ("status", 429, "RateLimitError"),
        ("status", 500, "InternalServerError"),
        ("malformed", 200, "InternalServerError"),
    ],
)
async def test_faults_raise_through_litellm_then_service_resumes(
    stub: StubLLM, litellm: ModuleType, kind: Any, status: int, error: str
) -> None:
    stub.fail(kind, status=status)
    with pytest.raises(Exception) as caught:
        await litellm.acompletion(
            model="openai/x", api_base=stub.base_url, messages=USER, num_retries=0
        )
    assert type(caught.value).__name__ == error
    assert len(stub.requests) == 1  # no hidden client retries
    ok = await litellm.acompletion(model="openai/x", api_base=stub.base_url, messages=USER)
    assert ok.choices[0].message.content == echo_reply(USER)
    assert [r.ok for r in stub.requests] == [False, True]


async def test_broken_sse_fails_mid_stream(stub: StubLLM, litellm: ModuleType) -> None:
    stub.fail("broken_sse")
    received: list[str] = []
    with pytest.raises(Exception):  # noqa: B017 - litellm wraps the connection error variously
        stream = await litellm.acompletion(
            model="openai/x", api_base=stub.base_url, messages=USER, stream=True, num_retries=0
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                received.append(chunk.choices[0].delta.content)
    assert received and "".join(received) != echo_reply(USER)
    assert not stub.requests[0].ok


async def test_a_client_hanging_up_mid_stream_is_recorded_not_an_error(
    stub: StubLLM, caplog: pytest.LogCaptureFixture
) -> None:
    import aiohttp

    stub.config.chunks, stub.config.chunk_latency = 20, 0.02
    body = {"model": "x", "messages": USER, "stream": True}
    url = stub.base_url + "/chat/completions"
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
        await response.content.readline()  # the first event, then hang up (a Stop)
    while not stub.requests[0].hung_up:
        await asyncio.sleep(0.02)
    assert not stub.requests[0].ok
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_hang_times_out_the_client(stub: StubLLM, litellm: ModuleType) -> None:
    stub.fail("hang")
    with pytest.raises(litellm.Timeout):
        await litellm.acompletion(
            model="openai/x", api_base=stub.base_url, messages=USER, num_retries=0, timeout=0.5
        )


async def test_cascade_falls_back_offline_when_the_stub_fails(stub: StubLLM) -> None:
    stub.fail("status", status=500)
    cascade = CascadeSummarizer([LiteLLMSummarizer("openai/s", api_base=stub.base_url)])
    messages = tuple(_message(i, t) for i, t in enumerate(CONVERSATION[:6]))
    result = await cascade.summarize(SummaryRequest(messages=messages))
    assert result.model == "offline-extractive"
    assert len(stub.requests) == 1


async def test_latency_delays_the_answer(
    monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)
    async with StubLLM(latency=0.3) as stub:
        await litellm.acompletion(model="openai/x", api_base=stub.base_url, messages=USER)
    (record,) = stub.requests
    assert record.finished is not None and record.finished - record.started >= 0.3


async def test_a_slow_model_waits_before_its_first_byte(
    monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)
    async with StubLLM() as stub:
        stub.config.slow_seconds = 0.3
        await litellm.acompletion(model="openai/stub-slow", api_base=stub.base_url, messages=USER)
        await litellm.acompletion(model="openai/stub", api_base=stub.base_url, messages=USER)
    slow, quick = stub.requests
    assert slow.finished is not None and slow.finished - slow.started >= 0.3
    assert quick.ok and slow.ok


def test_threaded_stub_serves_sync_litellm(
    monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)
    with ThreadedStubLLM() as stub:
        stub.script("from a thread")
        response = litellm.completion(model="openai/x", api_base=stub.base_url, messages=USER)
        assert response.choices[0].message.content == "from a thread"
        assert stub.usage("chat")[0] == 1


def test_process_prints_base_url_first_and_serves() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "topicforest.testing.stub_llm", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        body = b'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'
        request = urllib.request.Request(
            base_url + "/chat/completions", body, {"Content-Type": "application/json"}
        )
        events = urllib.request.urlopen(request, timeout=120).read().decode().split("\n\n")
        assert events[-2] == "data: [DONE]"
        assert all(e.startswith("data: ") for e in events if e)
    finally:
        process.terminate()
        assert process.wait(timeout=120) == 0


def test_transcript_round_trips_through_the_parser() -> None:
    messages = [_message(0, "line one\n\n# USER\nline three"), _message(1, "reply | with bar")]
    parsed, previous = parse_transcript(format_transcript(messages, "earlier summary"))
    assert previous == "earlier summary"
    assert [(m.role, m.content) for m in parsed] == [(m.role, m.content) for m in messages]


def test_split_chunks_rejoins_exactly() -> None:
    text = echo_reply(USER)
    pieces = split_chunks(text, 5)
    assert "".join(pieces) == text and 3 <= len(pieces) <= 5
    assert split_chunks("short", 1) == ["short"]


def test_summary_capacity_clamps() -> None:
    assert summary_capacity(100) == 40
    assert summary_capacity(1000) == 200
    assert summary_capacity(10_000) == 400
    assert summary_capacity(1000, asked=120) == 120


async def test_kind_faults_hit_only_that_kind_of_call(stub: StubLLM, litellm: ModuleType) -> None:
    stub.fail_kind("summary", "status", status=503)
    summarizer = LiteLLMSummarizer("openai/s", api_base=stub.base_url)
    messages = tuple(_message(i, t) for i, t in enumerate(CONVERSATION[:6]))
    chat = await litellm.acompletion(model="openai/x", api_base=stub.base_url, messages=USER)
    assert chat.choices[0].message.content == echo_reply(USER)  # chat untouched
    with pytest.raises(Exception, match=r"injected status 503"):
        await summarizer.summarize(SummaryRequest(messages=messages))
    assert (await summarizer.summarize(SummaryRequest(messages=messages))).text
    assert [(r.kind, r.ok) for r in stub.requests] == [
        ("chat", True),
        ("summary", False),
        ("summary", True),
    ]
