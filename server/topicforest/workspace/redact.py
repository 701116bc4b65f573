"""Keeping credentials out of text that is shown or logged."""

from __future__ import annotations

import os
import re

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/@:]*:)[^\s/@]+@", re.IGNORECASE)


def secret_values() -> list[str]:
    """Values of environment variables that look like credentials (to keep them out of text)."""
    return [v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 8]


def redact(text: str) -> str:
    for value in secret_values():
        text = text.replace(value, "***")
    text = URL_PASSWORD.sub(r"\1***@", text)
    return re.sub(r"\bsk-[A-Za-z0-9_-]{12,}", "sk-***", text)


def short_error(exc: BaseException) -> str:
    text = redact(f"{type(exc).__name__}: {exc}".strip())
    return text if len(text) <= 500 else text[:497] + "..."
