"""The loopback stub's configuration, faults and request log (`stub_llm` serves with them)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from topicforest.testing.stub_replies import SummaryMode

# eof: the stream's content, then a clean end with neither a finish_reason nor [DONE]
FaultKind = Literal["status", "hang", "malformed", "broken_sse", "eof"]
Latency = float | tuple[float, float]

STUB_API_KEY = "sk-stub-not-a-secret"  # litellm needs one set; checked only if `api_key` is
EXTRACTIVE_MODEL_MARK = "extractive"  # in a model name: the engine's extractive summary
SLOW_MODEL_MARK = "slow"  # in a model name: a chat reply waits slow_seconds before its first byte


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
    # Summary replies used in order instead of the computed one (a model replying badly)
    summary_replies: deque[str] = field(default_factory=deque)
    slow_seconds: float = 10.0  # for model names with SLOW_MODEL_MARK
    # set: `GET /props` reports it as llama.cpp's server does (`n_ctx`), for `auto` budgets
    context_window: int | None = None
    api_key: str | None = None  # set: calls without it are refused (401)
