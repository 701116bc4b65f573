"""The chat model: one streamed reply per turn, with as little as possible before the first byte.

litellm resolves every model string (provider, endpoint, key) and carries every provider. For the
OpenAI-compatible chat endpoints (OpenAI itself, `openai/<name>` with an api base, vLLM, LM
Studio) the request is then sent by a lean aiohttp client over a kept-alive connection: the
OpenAI SDK that litellm drives re-validates every message against its typed schema, which
costs 3–10 ms per call and grows with the number of messages in the context — on the chat
critical path, whose target is 10 ms p99 whatever the history length (docs/performance.md).
Every other provider streams through `litellm.acompletion`, unchanged, in the litellm worker
process (`llm_worker`), which also resolves model strings that name no endpoint.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from topicforest.workspace.keys import NO_KEYS, ApiKeys
from topicforest.workspace.llm_worker import WORKER, WorkerDeadline, litellm_provider

# Providers whose chat endpoint is OpenAI's `POST {base}/chat/completions`, and the environment
# variable litellm reads their key from.
DIRECT_PROVIDERS = {
    "openai": "OPENAI_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
    "lm_studio": "LM_STUDIO_API_KEY",
}
OPENAI_BASE = "https://api.openai.com/v1"
ERROR_BODY_CHARS = 2000
WORKER_GRACE = 5.0  # seconds past litellm's own timeout before the worker's deadline ends a call

if TYPE_CHECKING:
    import aiohttp


class ChatModelError(Exception):
    """The endpoint answered with an error or an unreadable stream (message safe to show once
    redacted: it quotes the provider's own error text)."""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Route:
    """How a configured model is reached: `url` set means the direct OpenAI-compatible path."""

    model: str  # the string the user configured (litellm's form)
    api_base: str | None
    name: str = ""  # what the endpoint calls the model
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # may hold an API key
    proxy: str | None = None  # from HTTP(S)_PROXY / NO_PROXY, read once (aiohttp's trust_env
    # reads the environment again on every request: ~0.7 ms of the critical path)


def resolve_route(model: str, api_base: str | None, keys: ApiKeys = NO_KEYS) -> Route:
    """Where `model` lives, asking litellm in this process (tests; the server asks its worker
    process, `ChatModel.route`)."""
    return explicit_route(model, api_base, keys) or litellm_route(model, api_base, keys)


def _explicit_off_loop(model: str, api_base: str | None, keys: ApiKeys) -> Route | None:
    import aiohttp  # noqa: F401  (imported here, off the loop, so the first turn does not pay it)

    return explicit_route(model, api_base, keys)


def explicit_route(model: str, api_base: str | None, keys: ApiKeys = NO_KEYS) -> Route | None:
    """The route of `openai/<name>` with an api base, which needs no lookup: litellm's own answer
    (tests/server/test_chat_model.py compares them), without importing litellm — seconds that a
    new window's first question would otherwise wait. None for every other model string."""
    prefix, _, name = model.partition("/")
    if prefix != "openai" or not name or not api_base or os.environ.get("USE_LITELLM_PROXY"):
        return None
    return _direct_route(model, api_base, keys, name, "openai", None, api_base)


def litellm_route(model: str, api_base: str | None, keys: ApiKeys = NO_KEYS) -> Route:
    """Ask litellm, in this process, where `model` lives (imports it: seconds, the first time)."""
    return route_for(model, api_base, litellm_provider(model, api_base), keys)


def route_for(
    model: str,
    api_base: str | None,
    found: tuple[str, str, str | None, str | None] | None,
    keys: ApiKeys = NO_KEYS,
) -> Route:
    """The route for litellm's answer (name, provider, key, base), None if it had none."""
    if found is None:
        return Route(model, api_base)
    return _direct_route(model, api_base, keys, *found)


def _direct_route(
    model: str,
    api_base: str | None,
    keys: ApiKeys,
    name: str,
    provider: str,
    key: str | None,
    base: str | None,
) -> Route:
    """The direct route for litellm's answer (name, provider, key, base), if it has one; the
    client's key for this provider and endpoint first, then the environment's."""
    env_key = DIRECT_PROVIDERS.get(provider)
    if env_key is None:
        return Route(model, api_base)
    key = keys.find(provider, api_base) or os.environ.get(env_key) or key
    if provider == "openai":
        base = base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        if not base and not key:
            return Route(model, api_base)  # litellm's error says which variable to set
        base = base or OPENAI_BASE
    if not base:
        return Route(model, api_base)
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if provider == "openai" and os.environ.get("OPENAI_ORGANIZATION"):
        headers["OpenAI-Organization"] = os.environ["OPENAI_ORGANIZATION"]
    url = base.rstrip("/") + "/chat/completions"
    return Route(model, api_base, name, url, headers, env_proxy(url))


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url`, as curl, httpx and aiohttp read it."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if urllib.request.proxy_bypass(host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(urllib.parse.urlsplit(url).scheme) or proxies.get("all")


class ChatModel:
    """Streams replies from one configured model; owns its connection pool (close() it)."""

    def __init__(
        self,
        model: str,
        api_base: str | None,
        timeout: float,
        first_byte_timeout: float | None = None,
        keys: ApiKeys = NO_KEYS,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self.keys = keys  # the client's API keys (`keys.py`), looked up per provider
        self.timeout = timeout  # the whole call
        self.first_byte_timeout = first_byte_timeout  # until the response starts
        self._route: Route | None = None
        self._session: aiohttp.ClientSession | None = None

    async def route(self) -> Route:
        """Where the model lives: from its string if it says it all, else litellm's answer
        from the worker process (the server never imports litellm)."""
        if self._route is None:
            route = await asyncio.to_thread(
                _explicit_off_loop, self.model, self.api_base, self.keys
            )
            if route is None:
                found = await WORKER.call("provider", self.model, self.api_base)
                route = route_for(self.model, self.api_base, found, self.keys)
            self._route = route
        return self._route

    async def stream(
        self, messages: list[dict[str, str]], on_sent: Callable[[], None] = lambda: None
    ) -> AsyncGenerator[tuple[str | None, Usage | None]]:
        """Yield (text delta, usage) pairs as they arrive; either may be None. `on_sent` runs
        when the request's first bytes are written (direct path) or handed to litellm."""
        route = await self.route()
        if route.url:
            pieces = self._direct(route, messages, on_sent)
        else:
            pieces = self._litellm(messages, on_sent)
        async for piece in pieces:
            yield piece

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _direct(
        self, route: Route, messages: list[dict[str, str]], on_sent: Callable[[], None]
    ) -> AsyncIterator[tuple[str | None, Usage | None]]:
        import aiohttp

        assert route.url is not None
        if self._session is None:
            trace = aiohttp.TraceConfig()
            trace.on_request_headers_sent.append(_headers_sent)
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout), trace_configs=[trace]
            )
        body = {
            "model": route.name,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        try:
            request = self._session.post(
                route.url,
                data=json.dumps(body),
                headers=route.headers,
                proxy=route.proxy,
                trace_request_ctx={"on_sent": on_sent},
            )
            first_byte = asyncio.timeout(self.first_byte_timeout)
            try:
                async with first_byte:
                    response = await request
            except TimeoutError as exc:
                if not first_byte.expired():
                    raise
                raise ChatModelError(
                    f"no first byte of a response within {self.first_byte_timeout:g} s "
                    "(the first-byte timeout, topicForest.chatFirstByteTimeout)"
                ) from exc
            async with response:
                if response.status >= 400:
                    raise ChatModelError(await _error_text(response))
                if response.content_type == "application/json":  # a server ignoring `stream`
                    yield _completion_piece(await response.json(content_type=None))
                    return
                finished = False  # a finish_reason or [DONE] seen: the reply is complete
                async for line in response.content:
                    data = line.strip()
                    if not data.startswith(b"data:"):
                        continue  # blank separators, comments, `event:` lines
                    data = data[5:].strip()
                    if data == b"[DONE]":
                        return
                    delta, usage, finish = _chunk_piece(data)
                    finished |= finish
                    yield delta, usage
                if not finished:  # the connection closed mid-reply: as a reset, not complete
                    raise ChatModelError("the stream ended before the reply was complete")
        except TimeoutError as exc:
            raise ChatModelError(
                f"no complete answer within the whole-call timeout of {self.timeout:g} s"
            ) from exc
        except aiohttp.ClientError as exc:
            raise ChatModelError(f"{route.url}: {exc}") from exc

    async def _litellm(
        self, messages: list[dict[str, str]], on_sent: Callable[[], None]
    ) -> AsyncIterator[tuple[str | None, Usage | None]]:
        on_sent()  # what litellm then does before its bytes leave is not visible from here
        # The worker's own deadlines too: a hung or dead worker must not hold the turn.
        first = self.first_byte_timeout or self.timeout + WORKER_GRACE
        pieces = WORKER.stream(
            "chat", self.model, self.api_base, self.timeout, messages, self.keys,
            first=first, total=self.timeout + WORKER_GRACE,
        )  # fmt: skip
        started = False
        try:
            async for delta, tokens in pieces:
                started = True
                yield delta, Usage(*tokens) if tokens else None
        except WorkerDeadline as exc:
            if started or not self.first_byte_timeout:
                raise ChatModelError(
                    f"no complete answer within the whole-call timeout of {self.timeout:g} s"
                ) from exc
            raise ChatModelError(
                f"no first byte of a response within {self.first_byte_timeout:g} s "
                "(the first-byte timeout, topicForest.chatFirstByteTimeout)"
            ) from exc


async def _headers_sent(session: Any, context: Any, params: Any) -> None:
    context.trace_request_ctx["on_sent"]()


def _chunk_piece(data: bytes) -> tuple[str | None, Usage | None, bool]:
    """(text delta, usage, whether a choice finished) of one stream event."""
    try:
        event = json.loads(data)
        if "error" in event:
            raise ChatModelError(_error_message(event, "stream error"))
        choices = event.get("choices") or []
        delta = (choices[0].get("delta") or {}).get("content") if choices else None
        finished = bool(choices and choices[0].get("finish_reason"))
        return (delta if isinstance(delta, str) else None), _usage(event.get("usage")), finished
    except (ValueError, AttributeError, TypeError) as exc:
        raise ChatModelError(f"unreadable stream event: {data[:200]!r}") from exc


def _completion_piece(body: Any) -> tuple[str | None, Usage | None]:
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ChatModelError("unreadable completion") from exc
    return (content if isinstance(content, str) else None), _usage(body.get("usage"))


def _usage(usage: Any) -> Usage | None:
    if not usage:
        return None
    get = usage.get if isinstance(usage, dict) else lambda key: getattr(usage, key, 0)
    return Usage(int(get("prompt_tokens") or 0), int(get("completion_tokens") or 0))


async def _error_text(response: aiohttp.ClientResponse) -> str:
    text = (await response.text(errors="replace"))[:ERROR_BODY_CHARS]
    try:
        detail = _error_message(json.loads(text), text)
    except ValueError:
        detail = text.strip() or response.reason or ""
    return f"HTTP {response.status}: {detail}"


def _error_message(body: Any, default: str) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or default)
    return str(error or default)
