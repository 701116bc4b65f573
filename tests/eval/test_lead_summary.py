"""The stub's independent lead summary (the eval's primary summarizer), through real litellm."""

from __future__ import annotations

import pytest

from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import SummaryRequest
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.engine.tokens import estimate_tokens
from topicforest.eval.run import STUB_EXTRACTIVE_MODEL, STUB_SUMMARY_MODEL
from topicforest.testing import stub_llm
from topicforest.testing.stub_llm import (
    StubLLM,
    lead_summary,
    split_sentences,
    summary_capacity,
)

TEXTS = [
    "Alpha one is first. Alpha two follows. Alpha three ends it.",
    "Beta one opens.\nBeta two is on its own line.",
    "Gamma one only.",
]


def _message(i: int, text: str) -> Message:
    role = "user" if i % 2 == 0 else "assistant"
    return Message(i + 1, "t", role, text, float(i), estimate_tokens(text))


def test_sentences_split_at_stops_and_line_breaks_and_drop_fences() -> None:
    text = "Use pool_size=20. Why?\n```python\nengine = create_engine(url)\n```\nDone! v1.2 ok"
    assert split_sentences(text) == [
        "Use pool_size=20.",
        "Why?",
        "engine = create_engine(url)",
        "Done!",
        "v1.2 ok",
    ]


def test_lead_summary_takes_first_sentences_of_all_messages_before_second_ones() -> None:
    firsts = sum(estimate_tokens(split_sentences(t)[0]) for t in TEXTS)
    # Room for exactly the first sentences: no second sentence of any message gets in.
    assert lead_summary(TEXTS, firsts) == "Alpha one is first.\nBeta one opens.\nGamma one only."
    # A little more room: the second round starts with the first message's second sentence.
    more = firsts + estimate_tokens("Alpha two follows.")
    assert lead_summary(TEXTS, more) == (
        "Alpha one is first. Alpha two follows.\nBeta one opens.\nGamma one only."
    )
    # Everything fits: every sentence, in conversation order.
    assert lead_summary(TEXTS, 1000).split("\n")[0] == (
        "Alpha one is first. Alpha two follows. Alpha three ends it."
    )


@pytest.mark.parametrize("capacity", [5, 12, 20, 33, 50])
def test_lead_summary_stays_within_capacity(capacity: int) -> None:
    summary = lead_summary(TEXTS * 4, capacity)
    assert estimate_tokens(summary) <= capacity


def test_lead_summary_never_calls_the_engines_extractive_scorer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the lead summary must not use the engine's extractive scorer")

    monkeypatch.setattr(ExtractiveSummarizer, "summarize_now", forbidden)
    prompt = "Summarize in at most 100 tokens:\n\n# USER\n| Alpha one. Alpha two."
    assert stub_llm.summarize_transcript(prompt) == "Alpha one. Alpha two."


@pytest.mark.usefixtures("stub_key")
async def test_stub_serves_the_lead_summary_and_the_extractive_one_by_model_name() -> None:
    texts = [f"Message {i} starts here. It then says detail {i} at length." for i in range(30)]
    messages = tuple(_message(i, t) for i, t in enumerate(texts))
    request = SummaryRequest(messages=messages, previous_summary="Earlier we chose X.")
    async with StubLLM() as stub:
        lead = await LiteLLMSummarizer(STUB_SUMMARY_MODEL, api_base=stub.base_url).summarize(
            request
        )
        extractive = await LiteLLMSummarizer(
            STUB_EXTRACTIVE_MODEL, api_base=stub.base_url
        ).summarize(request)
    capacity = summary_capacity(estimate_tokens(request.transcript()), request.target_tokens)
    assert lead.text == lead_summary(["Earlier we chose X.", *texts], capacity)
    lines = lead.text.split("\n")
    assert lines[0] == "Earlier we chose X."  # the earlier summary counts as the first message
    assert lines[1:4] == [f"Message {i} starts here." for i in range(3)]
    assert 0 < lead.output_tokens <= capacity
    expected = ExtractiveSummarizer().summarize_now(
        SummaryRequest(messages, "Earlier we chose X.", capacity)
    )
    assert extractive.text == expected.text != lead.text
    assert [r.kind for r in stub.requests] == ["summary", "summary"]


@pytest.mark.usefixtures("stub_key")
async def test_stub_recognises_aiders_summarize_request() -> None:
    # What aider's ChatSummary.summarize_all sends: its own prompt, then unquoted role blocks.
    system = stub_llm.AIDER_SUMMARIZE_PROMPT + "\nInclude less detail about older parts..."
    earlier = "I spoke to you previously about a number of things.\nWe use port 5001."
    question, answer = "Why is it slow? It hangs.", "Raise it. Done."
    content = f"# USER\n{earlier}\n# USER\n{question}\n# ASSISTANT\n{answer}\n"
    from topicforest.engine.llm import load_litellm

    litellm = load_litellm()
    async with StubLLM() as stub:
        response = await litellm.acompletion(
            model="openai/stub-summary",
            api_base=stub.base_url,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": content}],
        )
    (record,) = stub.calls()
    assert record.kind == "summary"
    capacity = summary_capacity(estimate_tokens(content))  # aider asks for no size
    text = response.choices[0].message.content
    assert text == lead_summary([earlier, question, answer], capacity)
    # The earlier summary is the first "message"; every message's first sentence is in, in order.
    assert text.startswith("I spoke to you previously about a number of things.")
    lines = text.split("\n")
    assert [line.split(".")[0].split("?")[0] for line in lines] == [
        "I spoke to you previously about a number of things",
        "Why is it slow",
        "Raise it",
    ]
