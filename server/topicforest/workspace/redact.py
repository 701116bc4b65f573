"""Keeping credentials out of text that is shown or logged."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/@:]*:)[^\s/@]+@", re.IGNORECASE)
MIN_SECRET = 8
# Keys the client handed over (`keys.py`): every one ever given, since a replaced key can
# still be echoed by a late error. Process-wide, as the log formatters that use it are.
_HIDDEN: set[str] = set()


def hide(values: Iterable[str]) -> None:
    """Redact these values from every text from now on (as environment values: from 8
    characters; a shorter one, such as a local server's "local", would mangle every text)."""
    _HIDDEN.update(v for v in values if len(v) >= MIN_SECRET)


def secret_values() -> list[str]:
    """Values of environment variables that look like credentials (to keep them out of text)."""
    found = [v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET]
    return sorted({*found, *_HIDDEN}, key=len, reverse=True)  # longest first: no half-redaction


def redact(text: str) -> str:
    for value in secret_values():
        text = text.replace(value, "***")
    text = URL_PASSWORD.sub(r"\1***@", text)
    return re.sub(r"\bsk-[A-Za-z0-9_-]{12,}", "sk-***", text)


def short_error(exc: BaseException) -> str:
    text = redact(f"{type(exc).__name__}: {exc}".strip())
    return text if len(text) <= 500 else text[:497] + "..."
