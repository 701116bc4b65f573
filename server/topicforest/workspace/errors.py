"""What a workspace refuses, as exceptions (the server translates each into a JSON-RPC error)."""

from __future__ import annotations


class ChatNotConfigured(Exception):
    """No `topicForest.chatModel` is set."""


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
