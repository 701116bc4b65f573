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
- `api_key` set (`--api-key`): every call must carry it (`Authorization: Bearer <key>`), or
  gets OpenAI's 401, which quotes the key it got (as a careless provider would), for tests of
  keys given over the protocol and of their redaction.
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

import asyncio
import contextlib
import random
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal

from aiohttp import web

from topicforest.engine.summarize.base import SUMMARIZE_PROMPT
from topicforest.engine.tokens import estimate_tokens
from topicforest.testing.stub_config import (  # re-exported for their users
    EXTRACTIVE_MODEL_MARK,
    SLOW_MODEL_MARK,
    STUB_API_KEY,
    Fault,
    FaultKind,
    Latency,
    RequestRecord,
    StubConfig,
)
from topicforest.testing.stub_replies import (  # the pure parts, re-exported for their users
    AIDER_SUMMARIZE_PROMPT,
    MESSAGE_OVERHEAD,
    SummaryMode,
    chunk,
    clip,
    completion,
    echo_reply,
    error_response,
    lead_summary,
    message_text,
    parse_transcript,
    send_event,
    split_chunks,
    split_sentences,
    stub_title,
    summarize_transcript,
    summary_capacity,
    summary_reply,
)

__all__ = [  # what tests and the evaluation import from here
    "AIDER_SUMMARIZE_PROMPT",
    "STUB_API_KEY",
    "Fault",
    "Latency",
    "StubLLM",
    "ThreadedStubLLM",
    "echo_reply",
    "lead_summary",
    "parse_transcript",
    "split_chunks",
    "split_sentences",
    "stub_title",
    "summarize_transcript",
    "summary_capacity",
]


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

    def _refused(self, request: web.Request) -> web.Response | None:
        """OpenAI's 401 when a key is required and not the one sent (quoting what was sent)."""
        wanted = self.config.api_key
        sent = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if wanted is None or sent == wanted:
            return None
        got = f"Incorrect API key provided: {sent}." if sent else "You didn't provide an API key."
        return error_response(401, got, "invalid_request_error")

    async def _models(self, request: web.Request) -> web.Response:
        if refused := self._refused(request):
            return refused
        return web.json_response({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        if refused := self._refused(request):
            return refused
        try:
            body = await request.json()
            messages = body["messages"]
            if not isinstance(messages, list):
                raise TypeError("messages must be a list")
        except (ValueError, KeyError, TypeError) as exc:
            return error_response(400, f"bad request: {exc}", "invalid_request_error")
        model = str(body.get("model", "stub"))
        stream = bool(body.get("stream", False))
        system = "\n".join(message_text(m) for m in messages if m.get("role") == "system")
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
            prompt_tokens=sum(
                estimate_tokens(message_text(m)) + MESSAGE_OVERHEAD for m in messages
            ),
        )
        self.requests.append(record)
        record.fault = self._next_fault(kind)
        slow = self.config.slow_seconds if kind == "chat" and SLOW_MODEL_MARK in model else 0.0
        await self._sleep(self._latency() + self.config.kind_latency.get(kind, 0.0) + slow)

        fault = record.fault
        if fault and fault.kind == "status":
            return error_response(
                fault.status,
                fault.message,
                "rate_limit_error" if fault.status == 429 else "api_error",
            )
        if fault and fault.kind == "hang":
            await self._sleep(self.config.hang_seconds)
            return error_response(504, "stub hang ended", "api_error")
        if fault and fault.kind == "malformed" and not stream:
            return web.Response(
                status=200, text='{"id": "broken", "choices": [', content_type="application/json"
            )

        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        if kind == "summary":
            mode = self.config.summary_mode
            if EXTRACTIVE_MODEL_MARK in model:
                mode = "extractive"
            replies = self.config.summary_replies
            reply = (
                replies.popleft()
                if replies
                else summary_reply(messages, mode, aider=aider, titles=self.config.titles)
            )
        else:
            reply = self._chat(messages)
        if isinstance(max_tokens, int) and max_tokens > 0:
            reply = clip(reply, max_tokens)
        record.reply = reply
        record.completion_tokens = estimate_tokens(reply)
        usage = {
            "prompt_tokens": record.prompt_tokens,
            "completion_tokens": record.completion_tokens,
            "total_tokens": record.prompt_tokens + record.completion_tokens,
        }
        if not stream:
            record.finished = time.time()
            return web.json_response(completion(model, reply, usage))
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
            await send_event(response, chunk(ident, created, record.model, delta, None))
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
        await send_event(response, chunk(ident, created, record.model, {}, "stop"))
        if include_usage:
            final = chunk(ident, created, record.model, {}, None)
            final["choices"] = []
            final["usage"] = usage
            await send_event(response, final)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        record.finished = time.time()
        return response

    # -- replies ---------------------------------------------------------------------------
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


if __name__ == "__main__":  # the process is stub_process.py's (run by name: no import cycle)
    import runpy

    runpy.run_module("topicforest.testing.stub_process", run_name="__main__")
