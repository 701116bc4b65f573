"""What a workspace refuses, as exceptions (the server translates each into a JSON-RPC error)."""

from __future__ import annotations

NOT_CONFIGURED = (
    "No chat model is configured. Run Configure Model (VS Code), or set "
    '`topicForest.chatModel` to a litellm model string (for example "gpt-4o-mini", '
    '"anthropic/claude-3-5-haiku-latest" or "openai/<name>" with `topicForest.apiBase`) and '
    "give the provider's API key (the editor's key store, or the environment: for example "
    "OPENAI_API_KEY). Topics work without a model."
)


class ChatNotConfigured(Exception):
    """No `topicForest.chatModel` is set (the message says how to set one)."""

    def __init__(self, message: str = NOT_CONFIGURED) -> None:
        super().__init__(message)


class ProviderError(Exception):
    """The chat model failed; the message is safe to show (secrets redacted)."""


class UnknownThread(Exception):
    """No thread has this id (rename, delete)."""


class NotRetryable(Exception):
    """`retryOf` is not the thread's last user message."""


class UnknownWorkspace(Exception):
    """A request named a workspace folder that is not open."""

    def __init__(self, uri: str, message: str) -> None:
        super().__init__(message)
        self.uri = uri
