"""A credential never becomes a setting: an apiBase carrying a password or a key is refused
as storeUrl is, without its value in the error, and a URL's password never reaches error text."""

from __future__ import annotations

import pytest

from topicforest.workspace.redact import short_error
from topicforest.workspace.settings import Settings, parse_settings

SECRET = "hunter2-very-secret"
KEPT = "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    "url",
    [
        f"http://bob:{SECRET}@llm.internal/v1",
        f"https://llm.internal/v1?api_key={SECRET}",
        f"https://llm.internal/v1?token={SECRET}",
    ],
)
def test_an_api_base_with_a_credential_is_refused_unechoed(url: str) -> None:
    update = parse_settings({"apiBase": url}, Settings(api_base=KEPT))
    assert update.settings.api_base == KEPT
    assert len(update.errors) == 1 and "apiBase" in update.errors[0]
    assert "environment" in update.errors[0] and SECRET not in update.errors[0]


def test_a_plain_api_base_is_taken() -> None:
    update = parse_settings({"apiBase": "http://llm.internal:8000/v1?api-version=2024-06-01"})
    assert update.errors == [] and update.settings.api_base.startswith("http://llm.internal")


def test_a_urls_password_never_reaches_error_text() -> None:
    error = ConnectionError(f"Cannot connect to host http://bob:{SECRET}@llm.internal/v1")
    text = short_error(error)
    assert SECRET not in text and "http://bob:***@llm.internal/v1" in text
