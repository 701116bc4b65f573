"""The context window a local model server reports sizes an `auto` budget (issue 28)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp

from topicforest.testing.stub_llm import StubLLM, ThreadedStubLLM
from topicforest.workspace.served_window import (
    llama_cpp_window,
    lm_studio_window,
    ollama_window,
    served_model,
    served_window,
)

from .conftest import CONFIG, Client, start


def test_each_servers_answer_is_read() -> None:
    show = {"model_info": {"qwen2.context_length": 32768}, "parameters": "stop <|im_end|>"}
    assert ollama_window(show) == 32768
    assert ollama_window({**show, "parameters": "num_ctx 8192\nstop x"}) == 8192  # what it runs
    assert llama_cpp_window({"default_generation_settings": {"n_ctx": 16384}}) == 16384
    assert llama_cpp_window({"n_ctx": 4096}) == 4096
    assert lm_studio_window({"max_context_length": 131072, "loaded_context_length": 8192}) == 8192
    assert lm_studio_window({"max_context_length": 131072}) == 131072
    for junk in (
        None,
        [],
        "x",
        {"n_ctx": True},
        {"n_ctx": -1},
        {"model_info": {"a.context_length": "9"}},
    ):
        assert ollama_window(junk) is None and llama_cpp_window(junk) is None
        assert lm_studio_window(junk) is None


def test_only_models_a_local_server_may_serve_are_asked() -> None:
    assert served_model("openai/qwen", "http://127.0.0.1:8080/v1") == (
        "http://127.0.0.1:8080",
        "qwen",
    )
    assert served_model("ollama/llama3", None) == ("http://localhost:11434", "llama3")
    assert served_model("openai/gpt-4o", None) is None  # no base: OpenAI itself
    assert served_model("anthropic/claude-3-5-sonnet", "http://x") is None
    assert served_model("gpt-4o", None) is None


async def test_a_llama_cpp_style_server_reports_its_window() -> None:
    async with StubLLM() as stub:
        assert await served_window("openai/local", stub.base_url) is None  # it says nothing
        stub.config.context_window = 65536
        assert await served_window("openai/local", stub.base_url) == 65536


@pytest.fixture
def windowed_stub(stub: ThreadedStubLLM) -> ThreadedStubLLM:
    stub.config.context_window = 65536
    return stub


@pytest_lsp.fixture(config=CONFIG)
async def local(
    lsp_client: Client, tmp_path: Path, windowed_stub: ThreadedStubLLM
) -> AsyncIterator[None]:
    await start(
        lsp_client, tmp_path, {"chatModel": "openai/local-qwen", "apiBase": windowed_stub.base_url}
    )
    yield
    await lsp_client.shutdown_session()


async def test_auto_budget_follows_the_window_a_local_server_reports(local: Client) -> None:
    # litellm does not know openai/local-qwen; the stub reports 65,536 tokens: auto = 1/16
    await local.until(lambda: any("litellm ready" in m.message for m in local.log_messages), 120)
    assert (await local.call("listTopics"))["budget"] == 4096
