"""API keys handed over the protocol (setApiKeys) reach the model, and nothing else: a real
server process, the loopback stub requiring a key (and quoting a wrong one back, as a careless
provider would), testModel naming each problem in plain words, and the server's stderr, its
log messages and the store's files checked for the keys afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from topicforest.server.protocol import CHAT_NOT_CONFIGURED, PREFIX, PROVIDER_ERROR
from topicforest.server.stdio_client import SERVE, RpcError, StdioClient
from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import SERVER_ENV, Client

HANG = 120  # seconds: bounds a hang only
KEY = "right-key-for-the-stub-0123456789"  # not sk-shaped: redacted as ours, not by shape
WRONG = "wrong-key-for-the-stub-9876543210"
DIRECT = "openai/stub-chat"  # streamed by the server itself
LITELLM = "custom_openai/stub-chat"  # through litellm, in the worker process


def test_keys_reach_the_model_and_never_a_log_the_store_or_an_error(tmp_path: Path) -> None:
    stderr = (tmp_path / "stderr").open("w+")
    store = tmp_path / ".store"
    env = {**SERVER_ENV, "OPENAI_API_KEY": ""}  # no key in the environment: only ours
    with (
        ThreadedStubLLM() as stub,
        StdioClient([*SERVE, "--log-level", "DEBUG"], env=env, stderr=stderr) as client,
    ):
        stub.config.api_key = KEY
        base = stub.base_url
        client.initialize(
            [tmp_path],
            {
                "storePath": str(store),
                "chatModel": DIRECT,
                "summaryModels": [],
                "models": [{"model": DIRECT, "apiBase": base}, {"model": LITELLM, "apiBase": base}],
            },
        )

        def call(method: str, params: dict[str, Any]) -> Any:
            return client.request(PREFIX + method, params, timeout=HANG)

        def keys(key: str) -> None:
            given = [
                {"provider": p, "apiBase": base, "apiKey": key} for p in ("openai", "custom_openai")
            ]
            assert call("setApiKeys", {"keys": given}) == {"count": 2}

        no_key = call("testModel", {})
        assert (no_key["ok"], no_key["problem"], no_key["apiBase"]) == (False, "noKey", base)
        assert "No API key for openai/stub-chat" in no_key["message"]

        keys(WRONG)
        for model in (DIRECT, LITELLM):
            refused = call("testModel", {"model": model})
            assert (refused["ok"], refused["problem"]) == (False, "keyRefused"), refused
            assert "refused" in refused["message"] and "Traceback" not in refused["detail"]
            assert "***" in refused["detail"]  # the stub quoted the key: redacted
        with pytest.raises(RpcError) as failed:
            call("chat", {"threadId": "t", "turnId": "1", "message": "hello"})
        assert failed.value.code == PROVIDER_ERROR and "401" in failed.value.message

        keys(KEY)
        for model in (DIRECT, LITELLM):
            assert call("testModel", {"model": model})["ok"] is True
            reply = call(
                "chat", {"threadId": "t", "turnId": model, "message": "hi", "model": model}
            )
            assert reply["reply"] and reply["cancelled"] is False
        unreachable = call("testModel", {"apiBase": "http://127.0.0.1:9/v1"})
        assert unreachable["problem"] == "unreachable", unreachable

        bad = {"provider": "openai", "apiKey": f"{KEY}\r\nX-Injected: 1"}
        with pytest.raises(RpcError) as refused_key:
            call("setApiKeys", {"keys": [bad]})
        assert (
            "keys[0].apiKey" in refused_key.value.message and KEY not in refused_key.value.message
        )
        logged = [p["message"] for m, p in client.notifications if m == "window/logMessage"]

    stderr.seek(0)
    texts = [
        stderr.read(),
        *logged,
        *(f.read_bytes().decode("utf-8", "replace") for f in store.rglob("*") if f.is_file()),
    ]
    assert any("refused" in t or "401" in t for t in texts[:1] + logged)  # the failures were logged
    for text in texts:
        assert KEY not in text and WRONG not in text


async def test_testing_without_a_chat_model_says_how_to_set_one(client: Client) -> None:
    error = await client.rpc_error("testModel", {})
    assert error.code == CHAT_NOT_CONFIGURED and "Configure Model" in error.message
    # a model named explicitly is tested even so: here an endpoint nothing listens on
    result = await client.call(
        "testModel", {"model": "openai/x", "apiBase": "http://127.0.0.1:9/v1"}
    )
    assert (result["ok"], result["problem"]) == (False, "unreachable")
    assert result["message"].startswith("Cannot reach the endpoint of openai/x")
