"""What the loopback stub answers (pure: tests and the evaluation use these too): summaries of
Topic Forest's and aider's transcripts, the chat reply that quotes the question or proposes its
fenced block back, and the OpenAI wire format they go out in."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any, Literal

from aiohttp import web

from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import QUOTE, SummaryRequest
from topicforest.engine.tokens import estimate_tokens

SummaryMode = Literal["lead", "extractive"]
SUMMARY_RATIO = 0.2
SUMMARY_MIN = 40
SUMMARY_MAX = 400
MESSAGE_OVERHEAD = 4  # tokens per chat message for role and separators, as the engine counts
_ASKED = re.compile(r"^Summarize in at most (\d+) tokens:\s*\n", re.MULTILINE)
_HEADERS = {"# USER": "user", "# ASSISTANT": "assistant", "# EARLIER SUMMARY": "summary"}
# The first line of aider's summarize prompt (aider/prompts.py `summarize`, aider-chat 0.86.2).
AIDER_SUMMARIZE_PROMPT = "*Briefly* summarize this partial conversation about programming."
# A sentence ends at . ! or ? followed by whitespace; a line break always ends one.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
_FENCE = re.compile(r"^`{3,}[\w+-]*$")  # a bare code fence line is no sentence
# A fenced code block: an opening fence (3+ backticks, an info string), then its lines up to a
# closing fence at least as long.
_FENCED_BLOCK = re.compile(r"^(`{3,})[^`\n]*\n(?:.*\n)*?\1`*[ \t]*$", re.MULTILINE)


def summary_capacity(input_tokens: int, asked: int | None = None) -> int:
    """Tokens the stub's 'model' can write: 20% of its input, clamped to 40–400, at most `asked`."""
    capacity = max(SUMMARY_MIN, min(SUMMARY_MAX, round(input_tokens * SUMMARY_RATIO)))
    return min(capacity, asked) if asked else capacity


def parse_transcript(text: str) -> tuple[list[Message], str | None]:
    """Invert `format_transcript`: role-headed blocks of quoted lines, plus an earlier summary."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        header = _HEADERS.get(line.strip())
        if header:
            blocks.append((header, []))
        elif blocks and (line.startswith(QUOTE) or line == QUOTE.rstrip()):
            blocks[-1][1].append(line[len(QUOTE) :])
    if not blocks:  # not our format: summarize the whole text as one user message
        blocks = [("user", text.split("\n"))]
    previous = None
    messages: list[Message] = []
    for role, lines in blocks:
        content = "\n".join(lines)
        if role == "summary":
            previous = content
        elif content.strip():
            messages.append(_stub_message(len(messages), role, content))
    return messages, previous


def summarize_transcript(prompt: str, mode: SummaryMode = "lead") -> str:
    """The stub's summary of a Topic Forest summarize prompt's user part (deterministic)."""
    asked_match = _ASKED.search(prompt)
    asked = int(asked_match.group(1)) if asked_match else None
    transcript = prompt[asked_match.end() :] if asked_match else prompt
    messages, previous = parse_transcript(transcript)
    target = summary_capacity(estimate_tokens(transcript), asked)
    if mode == "lead":
        texts = [previous] if previous else []
        return lead_summary([*texts, *(m.content for m in messages)], target)
    return _extractive(messages, previous, target)


def parse_aider_transcript(text: str) -> list[tuple[str, str]]:
    """(role, content) blocks of aider's summarize request: `# USER` / `# ASSISTANT` header
    lines, each followed by the message's text unquoted (aider's `ChatSummary.summarize_all`)."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        role = {"# USER": "user", "# ASSISTANT": "assistant"}.get(line.rstrip())
        if role:
            blocks.append((role, []))
        elif blocks:
            blocks[-1][1].append(line)
    if not blocks:
        return [("user", text)]
    return [(role, "\n".join(lines).strip("\n")) for role, lines in blocks]


def summarize_aider_transcript(prompt: str, mode: SummaryMode = "lead") -> str:
    """The stub's summary of an aider summarize request. aider asks for no size, so the capacity
    is the 20% rule alone; an earlier summary arrives as the first `# USER` block and is read as
    the first message."""
    blocks = [(role, content) for role, content in parse_aider_transcript(prompt) if content]
    target = summary_capacity(estimate_tokens(prompt))
    if mode == "lead":
        return lead_summary([content for _, content in blocks], target)
    messages = [_stub_message(i, role, content) for i, (role, content) in enumerate(blocks)]
    return _extractive(messages, None, target)


def summary_reply(
    messages: list[dict[str, Any]], mode: SummaryMode, *, aider: bool, titles: bool
) -> str:
    """The stub's reply to a summarize request (`titles`: a "Title: ..." line first)."""
    prompt = "\n".join(message_text(m) for m in messages if m.get("role") == "user")
    if aider:
        return summarize_aider_transcript(prompt, mode)
    summary = summarize_transcript(prompt, mode)
    return f"Title: {stub_title(summary)}\n{summary}" if titles else summary


def split_sentences(text: str) -> list[str]:
    """A deliberately simple sentence splitter: . ! ? before whitespace, and line breaks."""
    parts = (p.strip() for p in _SENTENCE_BREAK.split(text))
    return [p for p in parts if p and not _FENCE.match(p)]


def stub_title(summary: str) -> str:
    """A deterministic title for tests: the summary's first four words."""
    return " ".join(summary.split()[:4]).rstrip(".,:;") or "Untitled"


def lead_summary(texts: Sequence[str], capacity: int) -> str:
    """The leading sentences of each text within `capacity` tokens (estimate_tokens).

    Sentences are taken round by round: the first sentence of every text in order, then the
    second of every text, and so on; a sentence that would overflow the capacity is skipped
    (a shorter later one may still fit). The chosen sentences are written back in conversation
    order, one line per text. Counting each sentence on its own (with its +1) never undercounts
    the joined text.
    """
    sentences = [split_sentences(text) for text in texts]
    chosen: list[list[str]] = [[] for _ in texts]
    used = 0
    for rank in range(max((len(s) for s in sentences), default=0)):
        for index, own in enumerate(sentences):
            if rank >= len(own):
                continue
            cost = estimate_tokens(own[rank])
            if used + cost <= capacity:
                chosen[index].append(own[rank])
                used += cost
    return "\n".join(" ".join(picked) for picked in chosen if picked)


def _extractive(messages: Sequence[Message], previous: str | None, target: int) -> str:
    """The engine's own extractive summary (the second, non-independent mode)."""
    from topicforest.engine.summarize.extractive import ExtractiveSummarizer

    request = SummaryRequest(
        messages=tuple(messages), previous_summary=previous, target_tokens=target
    )
    return ExtractiveSummarizer().summarize_now(request).text


def _stub_message(index: int, role: str, content: str) -> Message:
    return Message(
        id=index + 1,
        thread_id="stub",
        role="user" if role == "user" else "assistant",
        content=content,
        timestamp=0.0,
        tokens=estimate_tokens(content),
    )


def fenced_block(text: str) -> str | None:
    """The first fenced code block in `text`, fences included; None when there is none."""
    match = _FENCED_BLOCK.search(text)
    return match.group(0) if match else None


def echo_reply(messages: list[dict[str, Any]]) -> str:
    """A deterministic chat answer that shows what the model was given (or, when the last user
    message holds a fenced code block, proposes that block back)."""
    last = next((message_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
    block = fenced_block(last)
    if block:
        return f"Here is the change, as the stub model proposes it:\n\n{block}\n"
    quoted = " ".join(last.split())
    if len(quoted) > 200:
        quoted = quoted[:199] + "…"
    context = sum(1 for m in messages if m.get("role") != "system")
    memory = sum(1 for m in messages if m.get("role") == "system")
    return (
        f'You asked: "{quoted}". '
        f"I can see {context} conversation messages and {memory} system messages. "
        "This is the stub model answering deterministically. "
        "Tell me more and I will quote it back."
    )


def split_chunks(text: str, count: int) -> list[str]:
    """Cut `text` at spaces into about `count` pieces that join back to exactly `text`."""
    if count <= 1 or len(text) < count:
        return [text]
    size = max(1, len(text) // count)
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        space = text.find(" ", end)
        end = len(text) if space < 0 or len(pieces) == count - 1 else space + 1
        pieces.append(text[start:end])
        start = end
    return pieces


def clip(text: str, max_tokens: int) -> str:
    if estimate_tokens(text) <= max_tokens:
        return text
    chars = max(0, (max_tokens - 1) * 3 - 2)
    return text[:chars]


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def completion(model: str, reply: str, usage: dict[str, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def chunk(
    ident: str, created: int, model: str, delta: dict[str, str], finish: str | None
) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def send_event(response: web.StreamResponse, payload: dict[str, Any]) -> None:
    await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")


def error_response(status: int, message: str, kind: str) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
    headers = {"Retry-After": "0"} if status == 429 else None
    return web.json_response(body, status=status, headers=headers)
