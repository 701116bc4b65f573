"""The pieces of setting a model up: per-model endpoints in `models`, the client's keys (lookup,
validation, redaction) and the plain words a provider's error becomes."""

from __future__ import annotations

import pytest

from topicforest.server.validation import ProtocolError, parse_api_key
from topicforest.workspace.keys import ApiKey, ApiKeys
from topicforest.workspace.model_check import classify
from topicforest.workspace.redact import hide, redact
from topicforest.workspace.settings import parse_settings, to_wire, window_config


def test_a_models_object_entry_carries_its_own_endpoint() -> None:
    raw = {
        "chatModel": "anthropic/claude-3-5-haiku-latest",
        "apiBase": "http://127.0.0.1:11434",
        "models": [
            "ollama/qwen2.5-coder",  # a string: shares apiBase, as before
            {"model": "openai/local", "apiBase": "http://127.0.0.1:1234/v1"},
            {"model": "anthropic/claude-3-5-haiku-latest"},  # the provider's own endpoint
        ],
    }
    update = parse_settings(raw)
    settings = update.settings
    assert update.errors == []
    assert settings.api_base_for("ollama/qwen2.5-coder") == "http://127.0.0.1:11434"
    assert settings.api_base_for("openai/local") == "http://127.0.0.1:1234/v1"
    assert settings.api_base_for("anthropic/claude-3-5-haiku-latest") is None
    assert settings.api_base_for("gpt-4o-mini") == "http://127.0.0.1:11434"  # named nowhere
    assert to_wire(settings)["models"] == [
        "ollama/qwen2.5-coder",
        {"model": "openai/local", "apiBase": "http://127.0.0.1:1234/v1"},
        {"model": "anthropic/claude-3-5-haiku-latest", "apiBase": None},
    ]


def test_a_models_entry_can_give_the_window_no_one_reports() -> None:
    """A model neither litellm nor its server sizes gets an "auto" budget from the window its
    entry gives (issue 28: "auto" fell back to 2,048 tokens for a local model, forever)."""
    raw = {
        "chatModel": "openai/local",
        "models": [{"model": "openai/local", "apiBase": None, "maxInputTokens": 65536}],
    }
    settings = parse_settings(raw).settings
    assert settings.window_for("openai/local") == 65536
    assert settings.window_for("gpt-4o-mini") is None
    assert window_config(settings, settings.window_for("openai/local")).history_budget == 4096
    assert to_wire(settings)["models"] == [
        {"model": "openai/local", "apiBase": None, "maxInputTokens": 65536}
    ]


@pytest.mark.parametrize(
    "entry",
    [
        {"model": "x", "apiBase": "http://user:pw@host/v1"},
        {"model": "x", "apiBase": 3},
        {"model": "x", "maxInputTokens": "big"},
        {"model": "x", "maxInputTokens": 100},
        7,
        {},
    ],
)
def test_a_bad_models_entry_keeps_the_previous_list(entry: object) -> None:
    previous = parse_settings({"models": ["kept"]}).settings
    update = parse_settings({"models": [entry]}, previous)
    assert update.settings.models == previous.models
    assert update.errors and "topicForest.models" in update.errors[0]


def test_a_key_belongs_to_its_provider_and_endpoint() -> None:
    keys = ApiKeys.of(
        [
            ApiKey("anthropic", None, "anthropic-key-123"),
            ApiKey("openai", "http://127.0.0.1:1234/v1/", "lmstudio-key-123"),
        ]
    )
    assert keys.find("anthropic", None) == "anthropic-key-123"
    assert keys.find("openai", "http://127.0.0.1:1234/v1") == "lmstudio-key-123"
    assert keys.find("openai", None) is None  # never sent to OpenAI itself
    assert keys.find("anthropic", "http://elsewhere") is None
    assert "key-123" not in repr(keys)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"provider": "openai", "apiKey": "abc def"}, "keys[0].apiKey"),
        ({"provider": "openai", "apiKey": "abc\r\nX-Evil: 1"}, "keys[0].apiKey"),
        ({"provider": "openai", "apiKey": ""}, "keys[0].apiKey"),
        ({"provider": "Open AI", "apiKey": "abc"}, "keys[0].provider"),
        ({"provider": "openai", "apiBase": "ftp://x", "apiKey": "abc"}, "keys[0].apiBase"),
        ({"provider": "openai", "apiBase": "http://u:p@x", "apiKey": "abc"}, "keys[0].apiBase"),
    ],
)
def test_a_bad_key_is_refused_naming_its_field_never_the_key(
    raw: dict[str, object], field: str
) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_api_key("keys[0]", raw)
    assert info.value.data == {"field": field}
    assert str(raw["apiKey"]) not in info.value.message or raw["apiKey"] == ""


def test_a_given_key_is_redacted_from_any_text() -> None:
    hide(["given-over-the-protocol-42"])
    assert redact("401: bad key given-over-the-protocol-42.") == "401: bad key ***."


@pytest.mark.parametrize(
    ("text", "keyed", "problem"),
    [
        # litellm's words, as the worker reports them
        (
            "WorkerError: AuthenticationError: litellm.AuthenticationError: Missing Anthropic "
            "API Key - A call is being made to anthropic but no key is set",
            True,
            "noKey",
        ),
        (
            "WorkerError: AuthenticationError: OpenAIException - The api_key client option must "
            "be set either by passing api_key to the client or by setting OPENAI_API_KEY",
            True,
            "noKey",
        ),
        (
            "WorkerError: AuthenticationError: litellm.AuthenticationError: "
            'AnthropicException - {"type":"error","error":{"type":"authentication_error",'
            '"message":"invalid x-api-key"}}',
            True,
            "keyRefused",
        ),
        (
            "WorkerError: NotFoundError: OllamaException - model 'qwen9' not found",
            True,
            "unknownModel",
        ),
        ("ChatModelError: HTTP 404: The model `gpt-9` does not exist", True, "unknownModel"),
        # the server's own client, direct path
        ("ChatModelError: HTTP 401: Incorrect API key provided: ***.", True, "keyRefused"),
        ("ChatModelError: HTTP 401: You didn't provide an API key.", False, "noKey"),
        (
            "ChatModelError: http://127.0.0.1:9/v1/chat/completions: Cannot connect to host "
            "127.0.0.1:9 ssl:default [Connect call failed ('127.0.0.1', 9)]",
            True,
            "unreachable",
        ),
        (
            "ChatModelError: no first byte of a response within 30 s (the first-byte timeout, "
            "topicForest.chatFirstByteTimeout)",
            True,
            "timeout",
        ),
        ("ChatModelError: HTTP 500: injected status 500", True, "failed"),
    ],
)
def test_a_provider_error_is_named_by_what_the_user_can_do(
    text: str, keyed: bool, problem: str
) -> None:
    assert classify(text, keyed) == problem
