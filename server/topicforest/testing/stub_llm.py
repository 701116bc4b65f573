"""A loopback OpenAI-compatible chat server, so tests and the evaluation run the real litellm path.

Point litellm at it with `model="openai/<any name>"` and `api_base=stub.base_url`. litellm's
openai provider insists on some API key: pass `api_key=STUB_API_KEY` or put `stub.env` (a fake
`OPENAI_API_KEY`) into the environment of the code under test.

- A summarize request (the system message carries Topic Forest's summarize prompt, or aider's
  `ChatSummary` prompt) gets a deterministic, capacity-limited summary: about 20% of the
  transcript's tokens, clamped to 40–400 (and never more than the request asks for). By default
  it is the *lead* summary (`lead_summary`): the first sentence of every message in order, then
  the second of every message, and so on until the capacity; it shares no code with the engine's
  summarizers, so an evaluation using it cannot be tuned by tuning the engine. A model name
  containing "extractive" (e.g. `openai/stub-extractive`), or `StubLLM(summary_mode=
  "extractive")`, selects the engine's own `ExtractiveSummarizer` instead.
- Any other request gets a deterministic chat reply quoting the last user message, or the next
  scripted reply; streamed (`stream: true`) as several SSE chunks. When the last user message
  holds a fenced code block, the reply proposes that block back instead (the first one, verbatim,
  its fence line included, so a `path=...` on it still names the file): what a model asked to
  change code answers with, for tests of a reply's code block (Apply to File, say).
- A model name containing "slow" (e.g. `openai/stub-slow`) waits `slow_seconds` (10 s; the
  process's `--slow-seconds`) before a chat reply's first byte: for tests of a stop before the
  first token.
- `context_window` set: `GET /props` reports it as llama.cpp's server does, for tests of the
  window a local server reports.
- Latency per call and per chunk, fault injection per call (HTTP status, hang, malformed JSON,
  broken SSE, a stream that ends early but cleanly) and a request log with token counts for
  assertions and cost accounting.

Use it in-process (`async with StubLLM() as stub:`), from sync code (`with ThreadedStubLLM() as
stub:`), or as a process: `python -m topicforest.testing.stub_llm --port 0` prints its base URL
on the first stdout line and serves until terminated.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import QUOTE, SUMMARIZE_PROMPT, SummaryRequest
from topicforest.engine.tokens import estimate_tokens

# eof: the stream's content, then a clean end with neither a finish_reason nor [DONE]
FaultKind = Literal["status", "hang", "malformed", "broken_sse", "eof"]
SummaryMode = Literal["lead", "extractive"]
Latency = float | tuple[float, float]

STUB_API_KEY = "sk-stub-not-a-secret"  # the stub never checks it; litellm only needs one set
SUMMARY_RATIO = 0.2
SUMMARY_MIN = 40
SUMMARY_MAX = 400
MESSAGE_OVERHEAD = 4  # tokens per chat message for role and separators, as the engine counts
_ASKED = re.compile(r"^Summarize in at most (\d+) tokens:\s*\n", re.MULTILINE)
_HEADERS = {"# USER": "user", "# ASSISTANT": "assistant", "# EARLIER SUMMARY": "summary"}
# The first line of aider's summarize prompt (aider/prompts.py `summarize`, aider-chat 0.86.2).
AIDER_SUMMARIZE_PROMPT = "*Briefly* summarize this partial conversation about programming."
EXTRACTIVE_MODEL_MARK = "extractive"  # in a model name: the engine's extractive summary
SLOW_MODEL_MARK = "slow"  # in a model name: a chat reply waits slow_seconds before its first byte
# A sentence ends at . ! or ? followed by whitespace; a line break always ends one.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
_FENCE = re.compile(r"^`{3,}[\w+-]*$")  # a bare code fence line is no sentence
# A fenced code block: an opening fence (3+ backticks, an info string), then its lines up to a
# closing fence at least as long.
_FENCED_BLOCK = re.compile(r"^(`{3,})[^`\n]*\n(?:.*\n)*?\1`*[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Fault:
    """What to do instead of answering one call."""

    kind: FaultKind
    status: int = 500  # for kind="status"
    message: str = "injected fault"


@dataclass
class RequestRecord:
    started: float  # epoch seconds
    model: str
    messages: list[dict[str, Any]]
    stream: bool
    kind: Literal["summary", "chat"]
    prompt_tokens: int
    completion_tokens: int = 0
    reply: str = ""
    fault: Fault | None = None
    finished: float | None = None
    hung_up: bool = False  # the client closed the connection before the stream ended

    @property
    def ok(self) -> bool:
        return self.fault is None and self.finished is not None


@dataclass
class StubConfig:
    latency: Latency = 0.0  # seconds before answering each call (a (lo, hi) pair draws uniformly)
    chunk_latency: float = 0.0  # seconds between streamed chunks
    chunks: int = 4  # how many content chunks a streamed reply is cut into (at least)
    seed: int = 0
    hang_seconds: float = 3600.0  # a hang lasts this long or until the stub stops
    replies: deque[str] = field(default_factory=deque)  # scripted chat replies, used in order
    faults: deque[Fault | None] = field(default_factory=deque)  # per call, in order; None = ok
    # Per kind of call ("summary" / "chat"), added for the server tests: extra latency, and
    # faults consumed only by calls of that kind (before the shared `faults` queue).
    kind_latency: dict[str, float] = field(default_factory=dict)
    kind_faults: dict[str, deque[Fault]] = field(default_factory=dict)
    summary_mode: SummaryMode = "lead"  # for model names without EXTRACTIVE_MODEL_MARK
    # Topic Forest summaries open with a "Title: ..." line, as the prompt asks a real model to
    # (off by default: the evaluation's summarizer stays the plain lead summary).
    titles: bool = False
    slow_seconds: float = 10.0  # for model names with SLOW_MODEL_MARK
    # set: `GET /props` reports it as llama.cpp's server does (`n_ctx`), for `auto` budgets
    context_window: int | None = None


class StubLLM:
    """The stub server on an asyncio loop; `async with StubLLM(...) as stub:`."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: Latency = 0.0,
        chunk_latency: float = 0.0,
        chunks: int = 4,
        replies: Sequence[str] = (),
        faults: Sequence[Fault | None] = (),
        seed: int = 0,
        summary_mode: SummaryMode = "lead",
    ) -> None:
        self.host = host
        self.port = port
        self.config = StubConfig(
            latency=latency,
            chunk_latency=chunk_latency,
            chunks=max(1, chunks),
            seed=seed,
            replies=deque(replies),
            faults=deque(faults),
            summary_mode=summary_mode,
        )
        self.requests: list[RequestRecord] = []
        self._random = random.Random(seed)
        self._runner: web.AppRunner | None = None
        self._closing: asyncio.Event | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self._runner is None:
            raise RuntimeError("the stub is not running")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def env(self) -> dict[str, str]:
        """Environment for code under test (and child processes) that talks to this stub."""
        return {"OPENAI_API_KEY": STUB_API_KEY, "TOPICFOREST_STUB_BASE_URL": self.base_url}

    async def start(self) -> StubLLM:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for path in ("/v1/chat/completions", "/chat/completions"):
            app.router.add_post(path, self._completions)
        for path in ("/v1/models", "/models"):
            app.router.add_get(path, self._models)
        app.router.add_get("/props", self._props)
        self._closing = asyncio.Event()
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        if self._closing:
            self._closing.set()  # release hanging handlers
        if self._runner:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> StubLLM:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- configuration and log --------------------------------------------------------------
    def script(self, *replies: str) -> None:
        """Queue chat replies, used in order before the default echo."""
        self.config.replies.extend(replies)

    def fail(
        self, kind: FaultKind, *, status: int = 500, times: int = 1, message: str = ""
    ) -> None:
        """Make the next `times` calls fail this way (calls after them answer normally)."""
        fault = Fault(kind, status, message or f"injected {kind} {status}")
        self.config.faults.extend([fault] * times)

    def calls(self, kind: Literal["summary", "chat"] | None = None) -> list[RequestRecord]:
        return [r for r in self.requests if kind is None or r.kind == kind]

    def fail_kind(
        self,
        call_kind: Literal["summary", "chat"],
        kind: FaultKind,
        *,
        status: int = 500,
        times: int = 1,
        message: str = "",
    ) -> None:
        """Like `fail`, but only calls of `call_kind` take these faults."""
        fault = Fault(kind, status, message or f"injected {kind} {status}")
        self.config.kind_faults.setdefault(call_kind, deque()).extend([fault] * times)

    def _next_fault(self, call_kind: str) -> Fault | None:
        own = self.config.kind_faults.get(call_kind)
        if own:
            return own.popleft()
        return self.config.faults.popleft() if self.config.faults else None

    def usage(self, kind: Literal["summary", "chat"] | None = None) -> tuple[int, int, int]:
        """(answered calls, prompt tokens, completion tokens)."""
        done = [r for r in self.calls(kind) if r.ok]
        return (
            len(done),
            sum(r.prompt_tokens for r in done),
            sum(r.completion_tokens for r in done),
        )

    def reset_log(self) -> None:
        self.requests.clear()

    # -- handlers --------------------------------------------------------------------------
    async def _props(self, request: web.Request) -> web.Response:
        if self.config.context_window is None:
            raise web.HTTPNotFound()
        return web.json_response(
            {"default_generation_settings": {"n_ctx": self.config.context_window}}
        )

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
            messages = body["messages"]
            if not isinstance(messages, list):
                raise TypeError("messages must be a list")
        except (ValueError, KeyError, TypeError) as exc:
            return _error(400, f"bad request: {exc}", "invalid_request_error")
        model = str(body.get("model", "stub"))
        stream = bool(body.get("stream", False))
        system = "\n".join(_text(m) for m in messages if m.get("role") == "system")
        aider = AIDER_SUMMARIZE_PROMPT in system
        kind: Literal["summary", "chat"] = (
            "summary" if aider or SUMMARIZE_PROMPT in system else "chat"
        )
        record = RequestRecord(
            started=time.time(),
            model=model,
            messages=messages,
            stream=stream,
            kind=kind,
            prompt_tokens=sum(estimate_tokens(_text(m)) + MESSAGE_OVERHEAD for m in messages),
        )
        self.requests.append(record)
        record.fault = self._next_fault(kind)
        slow = self.config.slow_seconds if kind == "chat" and SLOW_MODEL_MARK in model else 0.0
        await self._sleep(self._latency() + self.config.kind_latency.get(kind, 0.0) + slow)

        fault = record.fault
        if fault and fault.kind == "status":
            return _error(
                fault.status,
                fault.message,
                "rate_limit_error" if fault.status == 429 else "api_error",
            )
        if fault and fault.kind == "hang":
            await self._sleep(self.config.hang_seconds)
            return _error(504, "stub hang ended", "api_error")
        if fault and fault.kind == "malformed" and not stream:
            return web.Response(
                status=200, text='{"id": "broken", "choices": [', content_type="application/json"
            )

        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        if kind == "summary":
            mode = self.config.summary_mode
            if EXTRACTIVE_MODEL_MARK in model:
                mode = "extractive"
            reply = self._summary(messages, mode, aider=aider)
        else:
            reply = self._chat(messages)
        if isinstance(max_tokens, int) and max_tokens > 0:
            reply = _clip(reply, max_tokens)
        record.reply = reply
        record.completion_tokens = estimate_tokens(reply)
        usage = {
            "prompt_tokens": record.prompt_tokens,
            "completion_tokens": record.completion_tokens,
            "total_tokens": record.prompt_tokens + record.completion_tokens,
        }
        if not stream:
            record.finished = time.time()
            return web.json_response(_completion(model, reply, usage))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        try:
            return await self._stream(request, record, usage, include_usage)
        except ConnectionResetError:  # the client hung up mid-stream (a Stop): no error here
            record.hung_up = True
            return web.Response(status=499)

    async def _stream(
        self,
        request: web.Request,
        record: RequestRecord,
        usage: dict[str, int],
        include_usage: bool,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        ident = f"chatcmpl-stub-{len(self.requests)}"
        created = int(time.time())
        pieces = split_chunks(record.reply, self.config.chunks)
        broken = record.fault is not None and record.fault.kind in ("broken_sse", "malformed")
        for index, piece in enumerate(pieces):
            delta: dict[str, str] = {"content": piece}
            if index == 0:
                delta["role"] = "assistant"
            await _send(response, _chunk(ident, created, record.model, delta, None))
            if broken and index >= min(1, len(pieces) - 1):
                # A half-written event, then the connection drops: what a crashing proxy sends.
                await response.write(b'data: {"id": "' + ident.encode() + b'", "choices": [{"del')
                if request.transport is not None:
                    request.transport.close()
                return response
            await self._sleep(self.config.chunk_latency)
        if record.fault is not None and record.fault.kind == "eof":  # cut short, cleanly
            await response.write_eof()
            return response
        await _send(response, _chunk(ident, created, record.model, {}, "stop"))
        if include_usage:
            final = _chunk(ident, created, record.model, {}, None)
            final["choices"] = []
            final["usage"] = usage
            await _send(response, final)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        record.finished = time.time()
        return response

    # -- replies ---------------------------------------------------------------------------
    def _summary(self, messages: list[dict[str, Any]], mode: SummaryMode, *, aider: bool) -> str:
        prompt = "\n".join(_text(m) for m in messages if m.get("role") == "user")
        if aider:
            return summarize_aider_transcript(prompt, mode)
        summary = summarize_transcript(prompt, mode)
        if self.config.titles:
            return f"Title: {stub_title(summary)}\n{summary}"
        return summary

    def _chat(self, messages: list[dict[str, Any]]) -> str:
        if self.config.replies:
            return self.config.replies.popleft()
        return echo_reply(messages)

    def _latency(self) -> float:
        latency = self.config.latency
        if isinstance(latency, tuple):
            return self._random.uniform(*latency)
        return latency

    async def _sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        assert self._closing is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)


# -- pure helpers (also used by tests and the evaluation) -----------------------------------
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
    last = next((_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
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


def _clip(text: str, max_tokens: int) -> str:
    if estimate_tokens(text) <= max_tokens:
        return text
    chars = max(0, (max_tokens - 1) * 3 - 2)
    return text[:chars]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _completion(model: str, reply: str, usage: dict[str, int]) -> dict[str, Any]:
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


def _chunk(
    ident: str, created: int, model: str, delta: dict[str, str], finish: str | None
) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def _send(response: web.StreamResponse, payload: dict[str, Any]) -> None:
    await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")


def _error(status: int, message: str, kind: str) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
    headers = {"Retry-After": "0"} if status == 429 else None
    return web.json_response(body, status=status, headers=headers)


# -- sync variant ---------------------------------------------------------------------------
class ThreadedStubLLM:
    """The stub on its own event loop thread, for sync code: `with ThreadedStubLLM() as stub:`.

    Attribute access (config, requests, script, fail, calls, usage) goes to the running StubLLM.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.stub = StubLLM(**kwargs)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="stub-llm", daemon=True)

    def start(self) -> ThreadedStubLLM:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.stub.start(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.stub.stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> ThreadedStubLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return self.stub.base_url

    @property
    def env(self) -> dict[str, str]:
        return self.stub.env

    @property
    def requests(self) -> list[RequestRecord]:
        return self.stub.requests

    @property
    def config(self) -> StubConfig:
        return self.stub.config

    def script(self, *replies: str) -> None:
        self.stub.script(*replies)

    def fail(
        self, kind: FaultKind, *, status: int = 500, times: int = 1, message: str = ""
    ) -> None:
        self.stub.fail(kind, status=status, times=times, message=message)

    def calls(self, kind: Literal["summary", "chat"] | None = None) -> list[RequestRecord]:
        return self.stub.calls(kind)

    def fail_kind(
        self,
        call_kind: Literal["summary", "chat"],
        kind: FaultKind,
        *,
        status: int = 500,
        times: int = 1,
        message: str = "",
    ) -> None:
        self.stub.fail_kind(call_kind, kind, status=status, times=times, message=message)

    def usage(self, kind: Literal["summary", "chat"] | None = None) -> tuple[int, int, int]:
        return self.stub.usage(kind)


# -- process --------------------------------------------------------------------------------
def _parse_latency(text: str) -> Latency:
    if ":" in text:
        lo, hi = text.split(":", 1)
        return (float(lo), float(hi))
    return float(text)


async def _serve(args: argparse.Namespace, ready: Callable[[str], None]) -> None:
    stub = StubLLM(
        host=args.host,
        port=args.port,
        latency=_parse_latency(args.latency),
        chunk_latency=args.chunk_latency,
        chunks=args.chunks,
        replies=args.reply or (),
    )
    stub.config.slow_seconds = args.slow_seconds
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with stub:
        ready(stub.base_url)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topicforest.testing.stub_llm",
        description="Loopback OpenAI-compatible stub; prints its base URL on the first line.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", default="0", help="seconds per call, or LO:HI")
    parser.add_argument("--chunk-latency", type=float, default=0.0, help="seconds per chunk")
    parser.add_argument("--chunks", type=int, default=4, help="content chunks per stream")
    parser.add_argument("--reply", action="append", help="scripted chat reply (repeatable)")
    parser.add_argument(
        "--slow-seconds", type=float, default=10.0, help='wait of a "slow" model\'s chat reply'
    )
    args = parser.parse_args(argv)

    def ready(url: str) -> None:
        sys.stdout.write(url + "\n")
        sys.stdout.flush()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, ready))
    return 0


if __name__ == "__main__":
    sys.exit(main())
