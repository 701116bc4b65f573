"""Shared test helpers: where ../shared/eval lives, and loading its conversations."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_EVAL = REPO.parent / "shared" / "eval"


def shared_conversations() -> list[Path]:
    return sorted(SHARED_EVAL.glob("*.json")) if SHARED_EVAL.is_dir() else []


def load_conversation(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


requires_shared_eval = pytest.mark.skipif(
    not shared_conversations(),
    reason=f"labelled eval conversations not found at {SHARED_EVAL} "
    "(CI has ../shared beside the repo)",
)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """One real PostgreSQL server for the session (see topicforest.testing.postgres); tests that
    need it skip, saying why, only where it cannot be installed or started."""
    try:
        import psycopg  # noqa: F401  (the `team` extra, part of `dev`)
    except ImportError as exc:
        pytest.skip(f"PostgreSQL tests need psycopg (pip install -e '.[dev]'): {exc}")
    from topicforest.testing.postgres import TempPostgres, Unavailable

    try:
        server = TempPostgres().start()
    except Unavailable as exc:
        pytest.skip(f"PostgreSQL is not available here: {exc}")
    yield server
    server.stop()
