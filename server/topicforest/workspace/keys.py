"""API keys the client hands over (`topicForest/setApiKeys`): in this process's memory only.

A key belongs to a provider (litellm's name for it: `openai`, `anthropic`, `gemini`,
`openrouter`, ...) and, for a self-hosted or OpenAI-compatible server, to that server's URL: a
key given for `http://127.0.0.1:1234/v1` is never sent to OpenAI, nor OpenAI's to it. Keys are
looked up per call (the chat route here, litellm's calls in the worker process, which gets the
table with each request) and win over the environment, which keeps working as before. They are
never settings, never stored and never logged: every value is redacted from log lines and error
text (`redact.hide`), and `repr` shows no value.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


def endpoint(api_base: str | None) -> str | None:
    """Comparable form of an endpoint URL (None: the provider's own)."""
    return api_base.strip().rstrip("/") or None if api_base else None


@dataclass(frozen=True)
class ApiKey:
    provider: str
    api_base: str | None
    key: str = field(repr=False)


@dataclass(frozen=True)
class ApiKeys:
    """The client's keys; picklable, so the worker process gets them with a request."""

    entries: tuple[ApiKey, ...] = ()

    @classmethod
    def of(cls, keys: Iterable[ApiKey]) -> ApiKeys:
        return cls(tuple(ApiKey(k.provider, endpoint(k.api_base), k.key) for k in keys))

    def find(self, provider: str, api_base: str | None) -> str | None:
        """The key for `provider` at `api_base` (None: its own endpoint), if the client gave one."""
        where = endpoint(api_base)
        for entry in self.entries:
            if entry.provider == provider and entry.api_base == where:
                return entry.key
        return None

    def values(self) -> list[str]:
        return [entry.key for entry in self.entries]

    def __repr__(self) -> str:
        return f"ApiKeys({', '.join(f'{k.provider}@{k.api_base}' for k in self.entries)})"


NO_KEYS = ApiKeys()
