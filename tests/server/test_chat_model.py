"""The chat model client: routes resolved by litellm, the direct OpenAI-compatible stream and the
litellm stream give the same reply, and every failure is a clear error (against the loopback stub).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from topicforest.testing.stub_llm import STUB_API_KEY, StubLLM
from topicforest.workspace.chat_model import (
    ChatModel,
    ChatModelError,
    Usage,
    explicit_route,
    litellm_route,
    resolve_route,
)

QUESTION = [{"role": "user", "content": "Why does data/loader.py call build_loader twice?"}]


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubLLM]:
    monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)
    async with StubLLM(chunks=5) as server:
        yield server


async def reply_of(model: ChatModel) -> tuple[str, Usage | None]:
    parts, usage = [], None
    try:
        async for delta, piece_usage in model.stream(QUESTION):
            parts.append(delta or "")
            usage = piece_usage or usage
    finally:
        await model.close()
    return "".join(parts), usage


def test_litellm_decides_which_models_take_the_direct_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    local = resolve_route("openai/qwen-coder", "http://127.0.0.1:8000/v1/")
    assert local.url == "http://127.0.0.1:8000/v1/chat/completions"
    assert local.name == "qwen-coder" and local.headers["Authorization"] == "Bearer sk-test"
    assert "sk-test" not in repr(local)  # a route can be logged without leaking the key
    hosted = resolve_route("gpt-4o-mini", None)
    assert hosted.url == "https://api.openai.com/v1/chat/completions"
    assert resolve_route("hosted_vllm/llama", "http://gpu:8000/v1").url is not None
    # Providers with their own wire format, and models litellm cannot place, stay with litellm.
    assert resolve_route("anthropic/claude-3-5-haiku-latest", None).url is None
    assert resolve_route("no-such-model-anywhere", None).url is None
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    assert resolve_route("gpt-4o-mini", None).url is None  # litellm says which key is missing
    assert "Authorization" not in resolve_route("openai/local", "http://127.0.0.1:1/v1").headers


@pytest.mark.parametrize("key", [None, "sk-test"])
@pytest.mark.parametrize(
    ("model", "api_base"),
    [
        ("openai/qwen-coder", "http://127.0.0.1:8000/v1/"),
        ("openai/org/model-7b", "https://llm.internal/v1"),
        ("openai/gpt-4o-mini", "https://api.openai.com/v1"),
    ],
)
def test_an_explicit_openai_route_is_what_litellm_resolves(
    monkeypatch: pytest.MonkeyPatch, model: str, api_base: str, key: str | None
) -> None:
    """`openai/<name>` with an api base is routed without importing litellm (a new window's
    first question does not wait seconds for it); the route must be litellm's own."""
    if key:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    else:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-1")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    quick = explicit_route(model, api_base)
    assert quick is not None and quick == litellm_route(model, api_base)
    assert resolve_route(model, api_base) == quick


def test_everything_else_is_routed_by_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    for model, api_base in [
        ("openai/gpt-4o-mini", None),  # the base comes from the environment or litellm
        ("gpt-4o-mini", "http://127.0.0.1:1/v1"),
        ("hosted_vllm/llama", "http://gpu:8000/v1"),
        ("anthropic/claude-3-5-haiku-latest", "http://127.0.0.1:1/v1"),
        ("openai/", "http://127.0.0.1:1/v1"),
    ]:
        assert explicit_route(model, api_base) is None, model
    monkeypatch.setenv("USE_LITELLM_PROXY", "true")  # litellm then sends everything to its proxy
    assert explicit_route("openai/qwen-coder", "http://127.0.0.1:8000/v1") is None


def test_the_proxy_comes_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        for variant in (name, name.upper()):
            monkeypatch.delenv(variant, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1,.internal")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolve_route("gpt-4o-mini", None).proxy == "http://proxy.corp:3128"
    assert resolve_route("openai/m", "http://127.0.0.1:8000/v1").proxy is None
    assert resolve_route("openai/m", "https://llm.internal/v1").proxy is None


async def test_direct_and_litellm_streams_agree(stub: StubLLM) -> None:
    direct = ChatModel("openai/stub-chat", stub.base_url, timeout=120)
    assert (await direct.route()).url is not None
    via_litellm = ChatModel("custom_openai/stub-chat", stub.base_url, timeout=120)
    assert (await via_litellm.route()).url is None

    first, first_usage = await reply_of(direct)
    second, second_usage = await reply_of(via_litellm)
    assert first == second == stub.requests[0].reply and first
    assert (
        first_usage
        == second_usage
        == Usage(stub.requests[0].prompt_tokens, stub.requests[0].completion_tokens)
    )
    sent = stub.requests[0]
    assert sent.model == "stub-chat" and sent.stream and sent.messages == QUESTION


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ("status", "HTTP 429: slow down"),
        ("broken_sse", "payload"),
        ("hang", "whole-call timeout of 0.5 s"),
    ],
)
async def test_direct_failures_are_clear_errors(stub: StubLLM, fault: str, expected: str) -> None:
    stub.config.hang_seconds = 5
    stub.fail_kind("chat", fault, status=429, message="slow down")  # type: ignore[arg-type]
    model = ChatModel("openai/stub-chat", stub.base_url, timeout=0.5 if fault == "hang" else 120)
    with pytest.raises(ChatModelError) as info:
        await reply_of(model)
    assert expected in str(info.value)


async def test_a_server_that_ignores_stream_still_answers(
    aiohttp_json_server: str,
) -> None:
    reply, usage = await reply_of(ChatModel("openai/plain", aiohttp_json_server, timeout=120))
    assert reply == "plain answer" and usage == Usage(7, 2)


async def test_unreadable_events_are_errors_not_silence(aiohttp_json_server: str) -> None:
    with pytest.raises(ChatModelError, match="unreadable stream event"):
        await reply_of(ChatModel("openai/garbled", aiohttp_json_server, timeout=120))


@pytest.fixture
async def aiohttp_json_server() -> AsyncIterator[str]:
    """An endpoint that answers `plain` with a JSON completion and `garbled` with a bad event."""

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if body["model"] == "plain":
            return web.json_response(
                {
                    "choices": [{"message": {"role": "assistant", "content": "plain answer"}}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 2},
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"data: {not json\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()
